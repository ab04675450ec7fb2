/**
 * `serve --task-seconds N`: tasks stay WORKING N s before they complete, so concurrency and
 * overload refusals can be produced from outside — by `probe` (its SendMessage does not wait for
 * the task) and by plain blocking calls held open — and the banner says so, with every tier
 * (and, without `--redis-prefix`, the store's default key prefix); `--redis-timeout` is parsed.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startServeProcess } from '../../../test/cli-process.helpers.js';
import { runProbe } from './probe.js';
import type { ResearchAgent } from './research-agent.js';
import { parseServeOptions, readyBanner } from './serve-command.js';

const dir = mkdtempSync(join(tmpdir(), 'a2a-ratelimit-tasks-'));
const serves: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(serves.map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
});

async function serve(config: string, args: string[]): Promise<ServeProcess> {
  const path = join(dir, `${serves.length}.yaml`);
  writeFileSync(path, config);
  const s = await startServeProcess(['--config', path, ...args]);
  serves.push(s);
  return s;
}

function send(baseUrl: string, caller: string, id: string, signal?: AbortSignal) {
  return fetch(`${baseUrl}/a2a/rest/message:send`, {
    method: 'POST',
    headers: {
      'content-type': 'application/a2a+json',
      'a2a-version': '1.0',
      authorization: `Bearer ${caller}`,
    },
    body: JSON.stringify({
      message: { messageId: id, role: 'ROLE_USER', parts: [{ text: 'slow' }] },
    }),
    ...(signal === undefined ? {} : { signal }),
  });
}

describe('serve --task-seconds', () => {
  it('a concurrency limit refuses the probe while its earlier tasks work (quota, 429)', async () => {
    const s = await serve(
      'policies:\n  - name: two-tasks\n    kind: concurrency\n    scope: caller\n    methods: [SendMessage]\n    max: 2\n',
      ['--task-seconds', '30'],
    );
    expect(s.banner).toContain(
      'tasks       each stays WORKING 30 s, then completes (send with returnImmediately to get it back at once)',
    );
    const report = await runProbe({
      baseUrl: s.baseUrl,
      binding: 'rest',
      method: 'SendMessage',
      maxRequests: 3,
      callerToken: `tasks-${process.pid}`,
    });
    expect(report.admittedBefore).toBe(2);
    expect(report.calls).toBe(3);
    expect(report.rejection).toMatchObject({ kind: 'quota', policy: 'two-tasks' });
    expect(report.failed).toEqual([]);
    expect(report.checks.find((c) => c.name === 'retry')?.status).toBe('skip');
  });

  it('a stream limit refuses a third SendStreamingMessage while two tasks work; the probe hangs up on admitted streams', async () => {
    const s = await serve(
      'policies:\n  - name: two-streams\n    kind: concurrency\n    scope: caller\n    methods: [SendStreamingMessage]\n    max: 2\n',
      ['--task-seconds', '30'],
    );
    // Reading an admitted stream to its end would take the task's 30 s: past this timeout.
    const report = await runProbe({
      baseUrl: s.baseUrl,
      binding: 'jsonrpc',
      method: 'SendStreamingMessage',
      maxRequests: 3,
      timeoutMs: 5_000,
      callerToken: `streams-${process.pid}`,
    });
    expect(report.admittedBefore).toBe(2);
    expect(report.rejection).toMatchObject({ kind: 'quota', policy: 'two-streams' });
    expect(report.failed).toEqual([]);
    // gRPC too: the probe takes the first event of an admitted stream and cancels it.
    const grpcReport = await runProbe({
      baseUrl: s.baseUrl,
      binding: 'grpc',
      grpcTarget: s.grpcTarget,
      method: 'SendStreamingMessage',
      maxRequests: 3,
      timeoutMs: 5_000,
      callerToken: `streams-grpc-${process.pid}`,
    });
    expect(grpcReport.admittedBefore).toBe(2);
    expect(grpcReport.rejection).toMatchObject({ kind: 'quota', policy: 'two-streams' });
  });

  it('an overload limit refuses a third blocking call while two are held open (503)', async () => {
    const s = await serve('policies:\n  - name: busy\n    kind: overload\n    maxInFlight: 2\n', [
      '--task-seconds',
      '30',
    ]);
    const held = new AbortController();
    const open = [0, 1].map((i) =>
      send(s.baseUrl, 'holder', `held-${i}`, held.signal).catch(() => undefined),
    );
    // Both held calls are in flight once the agent counts them: poll the third until refused.
    let status = 0;
    let body = '';
    for (let attempt = 0; attempt < 50 && status !== 503; attempt++) {
      const third = await send(
        s.baseUrl,
        'other',
        `third-${attempt}`,
        AbortSignal.timeout(500),
      ).catch(() => undefined);
      if (third !== undefined) {
        status = third.status;
        body = await third.text();
      }
    }
    held.abort();
    await Promise.all(open);
    expect(status).toBe(503);
    expect(body).toContain('AGENT_OVERLOADED');
  });

  it('the banner shows every tier of a tiered policy and a usage policy with its unit', async () => {
    const s = await serve(
      'policies:\n  - name: per-caller\n    kind: rate\n    methods: [SendMessage]\n    defaultTier: free\n    tiers:\n      free: { limit: 60, windowSeconds: 60, burst: 10 }\n      pro: { limit: 600, windowSeconds: 60, burst: 100 }\n  - name: tokens\n    kind: rate\n    unit: tokens\n    methods: [SendMessage]\n    limit: 10000\n    windowSeconds: 60\n',
      [],
    );
    expect(s.banner).toContain(
      'per-caller (rate, per caller): tier free (default) 60 per 60 s, burst 10; tier pro 600 per 60 s, burst 100, on SendMessage',
    );
    expect(s.banner).toContain('tokens (rate, per caller): 10000 tokens per 60 s, burst');
    expect(s.banner).toContain('tasks       complete at once');
  });
});

describe('serve --redis flags', () => {
  it('the banner names the store default prefix, a2arl:', () => {
    // No process and no Redis (tests that run `serve --redis` pass a prefix of their own, so runs
    // sharing a Redis never meet): the banner is built from the parsed flags.
    const agent = {
      cardUrl: 'http://127.0.0.1:1/.well-known/agent-card.json',
      jsonRpcUrl: 'http://127.0.0.1:1/a2a/jsonrpc',
      restUrl: 'http://127.0.0.1:1/a2a/rest',
      grpcTarget: '127.0.0.1:2',
      metricsUrl: undefined,
      limiter: { domain: 'localhost', policySet: { policies: [] } },
    } as unknown as ResearchAgent;
    const banner = readyBanner(agent, parseServeOptions({ redis: 'redis://127.0.0.1:6379' }));
    expect(banner).toContain(
      'store       redis redis://127.0.0.1:6379, keys a2arl:* (when Redis fails: insurance)',
    );
  });

  it('--redis-timeout: milliseconds > 0, only with --redis', () => {
    const redis = 'redis://127.0.0.1:6379';
    expect(parseServeOptions({ redis, redisTimeout: '2000' }).redisTimeoutMs).toBe(2000);
    expect(parseServeOptions({ redis }).redisTimeoutMs).toBeUndefined();
    expect(() => parseServeOptions({ redis, redisTimeout: '0' })).toThrow(
      '--redis-timeout must be a positive number, got "0"',
    );
    expect(() => parseServeOptions({ redisTimeout: '2000' })).toThrow(
      '--redis-timeout needs --redis <url>',
    );
  });
});
