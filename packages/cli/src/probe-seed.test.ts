/**
 * `probe` grading agents that are not ours, on loopback: a seed-conformant `node:http` agent
 * (JSON-RPC and REST, correct 429 bodies with RetryInfo = `Retry-After`, no `RateLimit` headers)
 * passes with a warning; a proxy that strips `Retry-After` fails it, and `--direct` says the
 * header was lost on the way while `RateLimit` was never sent; the SDK's agent with no limiter is
 * "no limiter found" after exactly the announced number of real tasks; a 120 MB body is read only
 * up to the cap, the rest cancelled.
 */

import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import {
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
  UserBuilder,
} from '@a2a-js/sdk/server/express';
import { exampleAgentCard } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { runCliProcess } from '../../../test/cli-process.helpers.js';
import { countingEchoExecutor } from '../../../test/echo-executor.helpers.js';
import { type SeedAgent, startSeedAgent } from '../../../test/fixtures/seed-agent.js';
import { CliError } from './cli-error.js';
import { runProbe } from './probe.js';
import { PROBE_MAX_BODY_BYTES } from './probe-capped-body.js';

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function seedAgent(burst: number): Promise<SeedAgent> {
  const agent = await startSeedAgent({ burst });
  closers.push(() => agent.close());
  return agent;
}

/** A reverse proxy to `target` that drops the `Retry-After` header of every answer. */
async function headerStrippingProxy(target: string): Promise<string> {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        const headers = { ...answer.headers };
        delete headers['retry-after'];
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  return listen(server);
}

const token = (name: string): string => `${name}-${process.pid}-${Date.now().toString(36)}`;

describe('a seed-conformant agent (not ours): required parts graded, RateLimit a warning', () => {
  it.each(['jsonrpc', 'rest'] as const)(
    '%s: passes with a warning for RateLimit',
    async (binding) => {
      const agent = await seedAgent(3);
      const notices: string[] = [];
      const report = await runProbe({
        baseUrl: agent.baseUrl,
        binding,
        method: 'SendMessage',
        maxRequests: 10,
        callerToken: token(`seed-${binding}`),
        announce: (line) => notices.push(line),
      });
      expect(notices).toEqual([
        `probe: at most 10 requests to ${agent.baseUrl}/${binding === 'rest' ? 'rest' : 'rpc'}: SendMessage until one is refused, then that call once more after its delay; each SendMessage the agent admits runs a real task there (up to 10). Cap with --max-requests N.`,
      ]);
      expect(report.passed).toBe(true);
      expect(report.failed).toEqual([]);
      expect(report.warnings).toEqual(['ratelimit']);
      expect(report.admittedBefore).toBe(3);
      expect(report.requestsSent).toBe(5); // 3 admitted, 1 refused, 1 retry
      expect(agent.ran()).toBe(4); // the retry too
      const byName = Object.fromEntries(report.checks.map((c) => [c.name, c]));
      expect(byName.ratelimit).toMatchObject({ status: 'warn', level: 'recommended' });
      for (const name of [
        'status',
        'body',
        'reason',
        'domain',
        'retry-info',
        'retry-after',
        'retry',
      ])
        expect(byName[name], name).toMatchObject({ status: 'pass', level: 'required' });
      expect(byName.domain?.detail).toBe('seed-agent.example');
      expect(report.rejection.kind).toBe('quota');
    },
  );

  it('the CLI: "PASS with a warning" and exit 0; no blame on a gateway that is not there', async () => {
    const agent = await seedAgent(2);
    const run = await runCliProcess([
      'probe',
      agent.baseUrl,
      '--binding',
      'rest',
      '--caller-token',
      token('seed-cli'),
    ]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('WARN  ratelimit');
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe(
      "PASS with a warning: 8 required checks passed; recommended, not received: ratelimit (--direct <the agent's own URL> tells what the agent never sent from what was lost on the way)",
    );
    expect(run.stdout).not.toMatch(/gateway|lost between|never sent it/);
  });

  it('--direct: Retry-After stripped on the way is "lost between the agent and you"; RateLimit "never sent"', async () => {
    const agent = await seedAgent(2);
    const proxy = await headerStrippingProxy(agent.baseUrl);
    const report = await runProbe({
      baseUrl: proxy,
      direct: agent.baseUrl,
      binding: 'rest',
      method: 'SendMessage',
      maxRequests: 10,
      callerToken: token('seed-direct'),
    });
    expect(report.passed).toBe(false);
    expect(report.failed).toEqual(['retry-after']);
    expect(report.warnings).toEqual(['ratelimit']);
    expect(report.origins).toEqual({ 'retry-after': 'path', ratelimit: 'agent' });
    expect(report.direct?.checks.find((c) => c.name === 'retry-after')?.status).toBe('pass');

    const run = await runCliProcess([
      'probe',
      proxy,
      '--direct',
      agent.baseUrl,
      '--binding',
      'rest',
      '--caller-token',
      token('seed-direct-cli'),
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /FAIL {2}retry-after +no Retry-After header received: .* \[the agent sent it: lost between the agent and you\]/,
    );
    expect(run.stdout).toMatch(/WARN {2}ratelimit +.*\[the agent never sent it\]/);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe(
      'FAIL: 1 of 8 required checks failed: lost between the agent and you: retry-after',
    );
    // The notice names both URLs before anything is sent.
    expect(
      run.stderr.split('\n').filter((l) => l.startsWith('probe: at most 100 requests to')),
    ).toEqual([
      `probe: at most 100 requests to ${proxy}/rest: SendMessage until one is refused, then that call once more after its delay; each SendMessage the agent admits runs a real task there (up to 100). Cap with --max-requests N.`,
      `probe: at most 100 requests to ${agent.baseUrl}/rest: SendMessage until one is refused, then that call once more after its delay; each SendMessage the agent admits runs a real task there (up to 100). Cap with --max-requests N.`,
    ]);
  });
});

describe('an agent with no limiter (the SDK alone)', () => {
  it('"no limiter found", after exactly --max-requests real tasks, announced before the first', async () => {
    const { executor, executions } = countingEchoExecutor();
    const app = express();
    const server = createServer(app);
    const baseUrl = await listen(server);
    const card = exampleAgentCard({
      name: 'no limiter',
      interfaces: [
        { url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC' },
        { url: `${baseUrl}/a2a/rest`, protocolBinding: 'HTTP+JSON' },
      ],
    });
    const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
    const userBuilder = UserBuilder.noAuthentication;
    app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
    app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder }));
    app.use('/a2a/rest', restHandler({ requestHandler, userBuilder }));

    for (const binding of ['jsonrpc', 'rest'] as const) {
      const before = executions();
      const notices: string[] = [];
      const error = await runProbe({
        baseUrl,
        binding,
        method: 'SendMessage',
        maxRequests: 7,
        announce: (line) => notices.push(line),
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CliError);
      expect((error as Error).message).toBe(
        `no limiter found: all 7 SendMessage calls over ${binding} were admitted and none was refused, so there is no rejection to check (raise --max-requests, or check that a policy limits SendMessage for this caller)`,
      );
      expect(notices).toHaveLength(1);
      expect(notices[0]).toContain('at most 7 requests');
      expect(notices[0]).toContain('runs a real task there (up to 7)');
      expect(executions() - before).toBe(7);
    }
  });
});

describe('bodies are read up to a cap', () => {
  it(`a 120 MB rejection body: ${PROBE_MAX_BODY_BYTES} bytes read, the rest cancelled (the server stops writing)`, async () => {
    const total = 120 * 1024 * 1024;
    let written = 0;
    let ended!: Promise<void>;
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const server = createServer((req, res) => {
      if (req.url === '/.well-known/agent-card.json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            supportedInterfaces: [{ url: `${baseUrl}/rest`, protocolBinding: 'HTTP+JSON' }],
          }),
        );
        return;
      }
      req.resume();
      ended = new Promise<void>((resolve) => res.once('close', () => resolve()));
      res.writeHead(429, {
        'content-type': 'application/a2a+json',
        'retry-after': '1',
        'content-length': String(total),
      });
      const pump = (): void => {
        while (written < total && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (written >= total) res.end();
      };
      pump();
    });
    const baseUrl = await listen(server);
    const report = await runProbe({
      baseUrl,
      binding: 'rest',
      method: 'SendMessage',
      maxRequests: 1,
    });
    await ended;
    const body = report.checks.find((c) => c.name === 'body');
    expect(body?.status).toBe('fail');
    expect(body?.detail).toContain(
      `a body longer than ${PROBE_MAX_BODY_BYTES} bytes (not read past that)`,
    );
    // What the server got out before the probe hung up: the cap plus what the sockets buffer.
    expect(written).toBeLessThan(total / 4);
    expect(report.checks.find((c) => c.name === 'retry')?.detail).toContain(
      '--max-requests 1 reached',
    );
  });

  it('a 120 MB agent card: refused past 1 MiB', async () => {
    let written = 0;
    const chunk = Buffer.alloc(64 * 1024, ' ');
    let ended!: Promise<void>;
    const server = createServer((_req, res) => {
      ended = new Promise<void>((resolve) => res.once('close', () => resolve()));
      res.writeHead(200, { 'content-type': 'application/json' });
      const pump = (): void => {
        while (written < 120 * 1024 * 1024 && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const baseUrl = await listen(server);
    await expect(
      runProbe({ baseUrl, binding: 'rest', method: 'SendMessage', maxRequests: 1 }),
    ).rejects.toThrow(/agent card at .* is larger than 1048576 bytes: probe reads no further/);
    await ended;
    expect(written).toBeLessThan(30 * 1024 * 1024);
  });
});
