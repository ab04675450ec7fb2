/**
 * "Test through every proxy": a real nginx in front of a real `a2a-ratelimit serve` (child
 * processes, loopback only, each gateway with its own config and prefix). Through a plain proxy —
 * HTTP `proxy_pass`, and gRPC `grpc_pass` on an `http2` listener — the probe passes on all three
 * bindings. Through an nginx that intercepts errors and turns 429 into its own 502 page, the REST
 * probe fails and (with `--direct`, the agent's own URL) names what was lost on the way, the CLI
 * exits non-zero, and our client still backs off
 * sanely: a bounded number of retries, every call ends in success or an error, none hangs.
 */

import { AgentCard, SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, RestTransportFactory } from '@a2a-js/sdk/client';
import { createRetryingFetch, retryErrorOf } from 'a2a-ratelimit/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  lastLine,
  runCliProcess,
  type ServeProcess,
  startServeProcess,
} from './cli-process.helpers.js';
import { findNginx, type NginxGateway, startNginxGateway } from './fixtures/nginx/nginx-gateway.js';

const nginx = findNginx();
const inCi = process.env.CI === 'true';
if (nginx === undefined && !inCi) {
  console.warn(
    '[cli-gateway] nginx is not installed: gateway tests skipped (apt-get install -y nginx)',
  );
}

describe.skipIf(nginx === undefined && !inCi)('probe and client through nginx', () => {
  let serve: ServeProcess;
  const gateways: NginxGateway[] = [];
  const gateway = async (
    mode: 'plain' | 'intercept' | 'page200' | 'json200' | 'own503',
  ): Promise<NginxGateway> => {
    if (nginx === undefined)
      throw new Error('nginx is required when CI=true (apt-get install -y nginx)');
    const g = await startNginxGateway(nginx, {
      agentHttpPort: serve.httpPort,
      agentGrpcPort: serve.grpcPort,
      mode,
    });
    gateways.push(g);
    return g;
  };
  const token = (name: string): string => `${name}-${process.pid}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    if (nginx === undefined)
      throw new Error('nginx is required when CI=true (apt-get install -y nginx)');
    serve = await startServeProcess();
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await serve?.stop();
  });

  it('plain proxy (proxy_pass, grpc_pass on http2): the probe passes on all three bindings', async () => {
    const g = await gateway('plain');
    const reports = await Promise.all(
      (['jsonrpc', 'rest', 'grpc'] as const).map((binding) =>
        probe({
          baseUrl: g.baseUrl,
          binding,
          method: 'SendMessage',
          maxRequests: 30,
          callerToken: token(`plain-${binding}`),
          grpcTarget: g.grpcTarget,
        }),
      ),
    );
    for (const report of reports) {
      const failed = report.checks.filter((c) => c.status !== 'pass');
      expect(failed, `${report.binding}: ${JSON.stringify(failed)}`).toEqual([]);
      expect(report.passed).toBe(true);
      // The burst of 10, plus one per second the probe's calls took on a loaded machine.
      expect(report.admittedBefore).toBeGreaterThanOrEqual(10);
      expect(report.admittedBefore).toBeLessThan(20);
      expect(report.rejection.delaySeconds).toBe(1);
      // The probe went through the gateway, not around it.
      expect(report.endpoint.startsWith(report.binding === 'grpc' ? g.grpcTarget : g.baseUrl)).toBe(
        true,
      );
      expect(report.checks.map((c) => c.name)).toEqual(
        expect.arrayContaining([
          'status',
          'media type',
          'body',
          'reason',
          'domain',
          'retry-info',
          'retry-after',
          'ratelimit',
          'retry',
        ]),
      );
    }
    expect(g.accessLog()).toContain('POST /a2a/rest/message:send');
    expect(g.accessLog()).toContain('POST /a2a/jsonrpc');
  });

  it('plain proxy, as a user runs it: `probe --binding grpc --grpc-target … --json` exits 0', async () => {
    const g = await gateway('plain');
    const run = await runCliProcess([
      'probe',
      g.baseUrl,
      '--binding',
      'grpc',
      '--grpc-target',
      g.grpcTarget,
      '--caller-token',
      token('cli-grpc'),
      '--json',
    ]);
    // Only the notice before the first call; the report is the JSON on stdout.
    expect(run.stderr).toBe(
      `probe: at most 100 requests to ${g.grpcTarget}: SendMessage until one is refused, then that call once more after its delay; each SendMessage the agent admits runs a real task there (up to 100). Cap with --max-requests N.\n`,
    );
    expect(run.code).toBe(0);
    const report = JSON.parse(lastLine(run.stdout)) as { passed: boolean; endpoint: string };
    expect(report).toMatchObject({ passed: true, endpoint: g.grpcTarget });
  });

  it('nginx turning 429 into its own 502 page: the REST probe fails and names what was lost', async () => {
    const g = await gateway('intercept');
    const report = await probe({
      baseUrl: g.baseUrl,
      binding: 'rest',
      method: 'SendMessage',
      maxRequests: 30,
      callerToken: token('intercept-rest'),
      direct: serve.baseUrl,
    });
    expect(report.passed).toBe(false);
    const required = ['status', 'media type', 'body', 'reason', 'retry-info', 'retry-after'];
    expect(report.failed).toEqual(expect.arrayContaining(required));
    expect(report.warnings).toEqual(['ratelimit']);
    // The agent reached directly sent every part: each was lost between the agent and the probe.
    expect(report.direct?.checks.filter((c) => c.status !== 'pass')).toEqual([]);
    for (const name of [...required, 'ratelimit']) expect(report.origins?.[name]).toBe('path');
    const detail = (name: string) => report.checks.find((c) => c.name === name)?.detail ?? '';
    expect(detail('status')).toContain('got 502');
    expect(detail('body')).toBe(
      'expected google.rpc.Status JSON under "error", got text/html (a gateway page?)',
    );
    expect(report.checks.find((c) => c.name === 'retry')?.status).toBe('skip');

    // JSON-RPC rejections travel as HTTP 200, so the same nginx lets them through intact.
    const jsonRpc = await probe({
      baseUrl: g.baseUrl,
      binding: 'jsonrpc',
      method: 'SendMessage',
      maxRequests: 30,
      callerToken: token('intercept-jsonrpc'),
    });
    expect(jsonRpc.passed).toBe(true);

    // The CLI says the same in its report and exits 1.
    const run = await runCliProcess([
      'probe',
      g.baseUrl,
      '--binding',
      'rest',
      '--caller-token',
      token('intercept-cli'),
      '--direct',
      serve.baseUrl,
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('FAIL  body');
    expect(run.stdout).toContain(
      'got text/html (a gateway page?) [the agent sent it: lost between the agent and you]',
    );
    expect(lastLine(run.stdout)).toMatch(
      /^FAIL: \d+ of \d+ required checks failed: lost between the agent and you: status, media type, body/,
    );
  });

  it('nginx answering 429 with a static 200 HTML page: probe exits 1 naming the loss, never counts it as an admission', async () => {
    const g = await gateway('page200');
    const report = await probe({
      baseUrl: g.baseUrl,
      binding: 'rest',
      method: 'SendMessage',
      maxRequests: 30,
      callerToken: token('page200-rest'),
    });
    expect(report.passed).toBe(false);
    // The serve agent admits 10 before refusing: the page is the 11th answer, not an admission.
    expect(report.admittedBefore).toBe(10);
    expect(report.failed).toEqual(
      expect.arrayContaining(['a2a-answer', 'status', 'body', 'reason']),
    );
    const answerDetail = report.checks.find((c) => c.name === 'a2a-answer')?.detail ?? '';
    expect(answerDetail).toContain('HTTP 200 with an HTML page (text/html)');
    expect(answerDetail).toContain('not an A2A answer, so no rejection was received');
    expect(g.accessLog()).toMatch(/POST \/a2a\/rest\/message:send HTTP\/1\.1" 200/);

    const run = await runCliProcess([
      'probe',
      g.baseUrl,
      '--binding',
      'rest',
      '--caller-token',
      token('page200-cli'),
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('FAIL  a2a-answer');
    expect(run.stdout).toContain('not an A2A answer, so no rejection was received');
    expect(run.stderr).not.toContain('no limiter found');
    // Without --direct the probe cannot tell who lost it, and says so.
    expect(lastLine(run.stdout)).toMatch(
      /^FAIL: .*: a2a-answer, status, .*\(--direct <the agent's own URL> tells what the agent never sent/,
    );
  });

  it('nginx answering 429 with static JSON and 200: named as no A2A answer', async () => {
    const g = await gateway('json200');
    const report = await probe({
      baseUrl: g.baseUrl,
      binding: 'rest',
      method: 'SendMessage',
      maxRequests: 30,
      callerToken: token('json200-rest'),
    });
    expect(report.passed).toBe(false);
    expect(report.admittedBefore).toBe(10);
    expect(report.checks.find((c) => c.name === 'a2a-answer')?.detail).toContain(
      'HTTP 200 with JSON with no task or message',
    );
  });

  it("nginx answering 429 with its own 503 page: not the agent's AGENT_OVERLOADED; --direct places the loss", async () => {
    const g = await gateway('own503');
    const report = await probe({
      baseUrl: g.baseUrl,
      binding: 'rest',
      method: 'SendMessage',
      maxRequests: 30,
      callerToken: token('own503-rest'),
      direct: serve.baseUrl,
    });
    expect(report.passed).toBe(false);
    expect(report.checks.find((c) => c.name === 'a2a-answer')?.detail).toContain(
      'not an A2A error, so no AGENT_OVERLOADED was received',
    );
    expect(report.origins?.['a2a-answer']).toBe('path');
  });

  it('nginx turning 429 into 502: our client still backs off sanely (no retry storm; success or a typed error)', async () => {
    const g = await gateway('intercept');
    const fetchImpl = createRetryingFetch({
      agentDeduplicates: true,
      maxRetries: 4,
      budgetMs: 20_000,
    });
    const counting: typeof fetch = async (input, init) => {
      sent++;
      return fetchImpl(input, init);
    };
    let sent = 0;
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new RestTransportFactory({ fetchImpl: counting })],
        preferredTransports: ['HTTP+JSON'],
      }),
    );
    // The card advertises the agent's own address; a client behind this gateway is given its URL.
    const card = AgentCard.fromJSON(
      await (await fetch(`${g.baseUrl}/.well-known/agent-card.json`)).json(),
    );
    const client = await factory.createFromAgentCard({
      ...card,
      supportedInterfaces: [
        {
          url: `${g.baseUrl}/a2a/rest`,
          protocolBinding: 'HTTP+JSON',
          tenant: '',
          protocolVersion: '1.0',
        },
      ],
    });
    const caller = token('intercept-client');
    const calls = 14;
    const before = g
      .accessLog()
      .split('\n')
      .filter((l) => l.includes('/message:send')).length;
    const startMs = Date.now();
    const results = await Promise.allSettled(
      Array.from({ length: calls }, (_, i) =>
        client.sendMessage(
          SendMessageRequest.fromJSON({
            message: {
              messageId: `${caller}-${i}`,
              role: 'ROLE_USER',
              parts: [{ text: 'gateway' }],
            },
          }),
          { serviceParameters: { authorization: `Bearer ${caller}` } },
        ),
      ),
    );
    const elapsedMs = Date.now() - startMs;
    const lines = g
      .accessLog()
      .split('\n')
      .filter((l) => l.includes('/message:send'));
    const seen = lines.length - before;
    const gatewayPages = lines.slice(before).filter((l) => / 502 /.test(l)).length;
    const fulfilled = results.filter((r) => r.status === 'fulfilled').length;
    const failed = results.filter((r) => r.status === 'rejected');
    console.log('[cli-gateway] client through intercepting nginx', {
      calls,
      fulfilled,
      failed: failed.length,
      seen,
      gatewayPages,
      elapsedMs,
    });
    expect(sent).toBe(calls); // the SDK sent each call once; every re-send was the client's
    expect(fulfilled).toBeGreaterThanOrEqual(10);
    // Bounded: at most 1 + maxRetries sends per call, and far fewer in practice.
    expect(seen).toBeLessThanOrEqual(calls * 5);
    expect(gatewayPages).toBeGreaterThanOrEqual(4);
    for (const r of failed) {
      // Our typed error, or the SDK's own error for the last gateway page: never a hang.
      const reason = r.reason as Error;
      expect(retryErrorOf(reason) !== undefined || reason instanceof Error).toBe(true);
    }
    expect(elapsedMs).toBeLessThan(20_000);
  });
});

/** What `probe --json` prints (the fields these tests read). */
interface ProbeJson {
  readonly binding: string;
  readonly endpoint: string;
  readonly passed: boolean;
  readonly admittedBefore: number;
  readonly rejection: { readonly delaySeconds: number };
  readonly checks: readonly {
    readonly name: string;
    readonly status: string;
    readonly detail?: string;
  }[];
  readonly failed: readonly string[];
  readonly warnings: readonly string[];
  readonly direct?: {
    readonly checks: readonly { readonly name: string; readonly status: string }[];
  };
  readonly origins?: Readonly<Record<string, string>>;
}

/** Runs `a2a-ratelimit probe … --json` as a user does and reads its report. */
async function probe(options: {
  readonly baseUrl: string;
  readonly binding: 'jsonrpc' | 'rest' | 'grpc';
  readonly method: string;
  readonly maxRequests: number;
  readonly callerToken: string;
  readonly grpcTarget?: string;
  readonly direct?: string;
}): Promise<ProbeJson> {
  const run = await runCliProcess([
    'probe',
    options.baseUrl,
    '--binding',
    options.binding,
    '--method',
    options.method,
    '--max-requests',
    String(options.maxRequests),
    '--caller-token',
    options.callerToken,
    ...(options.grpcTarget === undefined ? [] : ['--grpc-target', options.grpcTarget]),
    ...(options.direct === undefined ? [] : ['--direct', options.direct]),
    '--json',
  ]);
  const report = JSON.parse(lastLine(run.stdout)) as ProbeJson;
  expect(run.code, run.stderr).toBe(report.passed ? 0 : 1);
  return report;
}

describe('gateway prerequisites', () => {
  it.runIf(inCi)('nginx is installed in CI', () => {
    expect(nginx, 'CI=true needs nginx (apt-get install -y nginx)').toBeDefined();
  });
});
