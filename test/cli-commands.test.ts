/**
 * The CLI as a user meets it (child processes from source, loopback only): errors a user can act
 * on — bad flags, an unreachable agent, a wrong binding, an agent that never rejects, a bad config
 * file — are one line on stderr with a non-zero exit and no stack trace; `serve` prints its URLs,
 * takes a policy file, and stops cleanly on SIGTERM, releasing its ports.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runCliProcess, startServeProcess } from './cli-process.helpers.js';
import { freePort } from './fixtures/nginx/nginx-gateway.js';
import { deletePrefix, runPrefix } from './fixtures/redis/redis-env.js';

const dir = mkdtempSync(join(tmpdir(), 'a2a-ratelimit-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** One line on stderr, nothing that looks like a stack trace, a non-zero exit. */
function expectOneLineError(run: { code: number | null; stderr: string }, pattern: RegExp): void {
  expect(run.code).not.toBe(0);
  expect(run.code).not.toBeNull();
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(lines[0]).toMatch(/^a2a-ratelimit: /);
  expect(lines[0]).toMatch(pattern);
}

describe('errors a user can act on', () => {
  it('bad flags, unknown commands, a bad base URL: one line, exit 2', async () => {
    const cases: [string[], RegExp][] = [
      [['demo', '--binding', 'soap'], /--binding must be jsonrpc, rest or grpc, got "soap"/],
      [['demo', '--time-scale', 'fast'], /--time-scale must be a positive number, got "fast"/],
      [['demo', '--frobnicate'], /Unknown option `--frobnicate`/],
      [['serve', '--port', '99999'], /--port must be a port number 0-65535, got "99999"/],
      [
        ['serve', '--redis-on-error', 'pray'],
        /--redis-on-error must be fail-open, fail-closed or insurance/,
      ],
      [['probe'], /missing required args for command `probe <base-url>`/],
      [['probe', 'ftp://x'], /base-url must be an http:\/\/ or https:\/\/ URL/],
      [
        ['probe', 'http://127.0.0.1:9', '--method', 'Teleport'],
        /--method must be one of SendMessage/,
      ],
      [['probe', 'http://127.0.0.1:9', '--burst', '0'], /--burst must be a positive/],
      [['probe', 'http://127.0.0.1:9', '--max-requests', 'x'], /--max-requests must be a positive/],
      [
        ['probe', 'http://127.0.0.1:9', '--method', 'GetTask', '--max-requests', '1'],
        /--max-requests must be at least 2 for GetTask/,
      ],
      [['probe', 'http://127.0.0.1:9', '--direct', 'ftp://x'], /--direct must be an http/],
      [['frob'], /unknown command "frob"/],
    ];
    const runs = await Promise.all(cases.map(([args]) => runCliProcess(args)));
    for (const [index, run] of runs.entries()) {
      const [args, pattern] = cases[index] as [string[], RegExp];
      expectOneLineError(run, pattern);
      expect(run.code, args.join(' ')).toBe(2);
    }
  });

  it('bad config files name the field (zod) or the policy (PolicyError)', async () => {
    const cases: [string, RegExp][] = [
      [
        file(
          'zero.yaml',
          'policies:\n  - name: p\n    kind: rate\n    limit: 0\n    windowSeconds: 60\n',
        ),
        /zero\.yaml: policies\[0\]\.limit: must be a positive integer$/,
      ],
      [
        file('kind.json', '{"policies":[{"name":"p","kind":"leaky","limit":5}]}'),
        /kind\.json: policies\[0\]\.kind: must be "rate", "concurrency" or "overload"$/,
      ],
      [
        file(
          'typo.yaml',
          'policies:\n  - name: p\n    kind: rate\n    limit: 5\n    windowSeconds: 60\n    brust: 3\n',
        ),
        /typo\.yaml: policies\[0\]: unknown field "brust"$/,
      ],
      [
        file('missing.yaml', 'policies:\n  - name: p\n    kind: concurrency\n'),
        /missing\.yaml: policies\[0\]\.max: is required$/,
      ],
      [
        file(
          'method.yaml',
          'policies:\n  - name: p\n    kind: rate\n    limit: 5\n    windowSeconds: 60\n    methods: [SendMessage, Teleport]\n',
        ),
        /policies\[0\]\.methods\[1\]: must be an A2A 1\.0 method name/,
      ],
      [
        file(
          'dup.yaml',
          'policies:\n  - {name: p, kind: rate, limit: 5, windowSeconds: 60}\n  - {name: p, kind: rate, limit: 9, windowSeconds: 60}\n',
        ),
        /dup\.yaml: Policy "p": name is used by more than one policy$/,
      ],
      [file('broken.yaml', 'policies: [\n'), /broken\.yaml: not valid YAML/],
      [join(dir, 'nope.yaml'), /cannot read config file .*nope\.yaml: no such file$/],
    ];
    const runs = await Promise.all(
      cases.map(([path]) =>
        runCliProcess(['serve', '--port', '0', '--grpc-port', '0', '--config', path]),
      ),
    );
    for (const [index, run] of runs.entries())
      expectOneLineError(run, (cases[index] as [string, RegExp])[1]);
  });

  it('an unreachable agent, an unreachable Redis, a port in use: one line', async () => {
    const port = await freePort();
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()));
    const busyPort = (busy.address() as { port: number }).port;
    try {
      const [probe, redis, inUse] = await Promise.all([
        runCliProcess(['probe', `http://127.0.0.1:${port}`]),
        runCliProcess([
          'serve',
          '--port',
          '0',
          '--grpc-port',
          '0',
          '--redis',
          `redis://127.0.0.1:${port}`,
        ]),
        runCliProcess(['serve', '--port', String(busyPort), '--grpc-port', '0']),
      ]);
      expectOneLineError(
        probe,
        new RegExp(`cannot reach the agent at http://127\\.0\\.0\\.1:${port}/: ECONNREFUSED`),
      );
      expectOneLineError(
        redis,
        new RegExp(`cannot reach Redis at redis://127\\.0\\.0\\.1:${port}`),
      );
      expectOneLineError(
        inUse,
        new RegExp(`HTTP port ${busyPort} on 127\\.0\\.0\\.1 is already in use`),
      );
    } finally {
      busy.close();
    }
  });
});

describe('serve', () => {
  const stops: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    await Promise.all(stops.map((stop) => stop()));
  });

  it('prints its URLs and demo authentication; SIGTERM stops it with exit 0 and frees its ports', async () => {
    const serve = await startServeProcess();
    expect(serve.banner).toContain(`agent card  ${serve.baseUrl}/.well-known/agent-card.json`);
    expect(serve.banner).toContain(`REST        ${serve.baseUrl}/a2a/rest`);
    expect(serve.banner).toContain(`metrics     ${serve.baseUrl}/metrics`);
    expect(serve.banner).toContain('per-caller (rate, per caller): 60 per 60 s, burst 10');
    expect(serve.banner).toContain('Authorization: Bearer <caller>[@<tier>]');
    const card = (await (await fetch(`${serve.baseUrl}/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { url: string; protocolBinding: string }[];
    };
    expect(card.supportedInterfaces.map((i) => i.protocolBinding)).toEqual([
      'JSONRPC',
      'HTTP+JSON',
      'GRPC',
    ]);
    expect(card.supportedInterfaces[2]?.url).toBe(serve.grpcTarget);
    const metrics = await (await fetch(`${serve.baseUrl}/metrics`)).text();
    expect(metrics).toContain('a2a_ratelimit_admissions_total');

    const ended = await serve.stop('SIGTERM');
    expect(ended).toEqual({ code: 0, signal: null });
    expect(serve.output()).toContain('stopped');
    for (const port of [serve.httpPort, serve.grpcPort]) {
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('--config and --mirror-http-status: the probe sees 429 on JSON-RPC; an agent that never rejects is an error', async () => {
    const config = file(
      'two.yaml',
      'domain: research.example.com\npolicies:\n  - name: tight\n    kind: rate\n    scope: caller\n    methods: [SendMessage]\n    limit: 60\n    windowSeconds: 60\n    burst: 2\n  - name: lists\n    kind: rate\n    methods: [ListTasks]\n    limit: 1000\n    windowSeconds: 60\n',
    );
    const serve = await startServeProcess(['--config', config, '--mirror-http-status']);
    stops.push(() => serve.stop());
    expect(serve.banner).toContain(
      'tight (rate, per caller): 60 per 60 s, burst 2, on SendMessage',
    );
    const [probe, never] = await Promise.all([
      runCliProcess([
        'probe',
        serve.baseUrl,
        '--binding',
        'jsonrpc',
        '--caller-token',
        'mirror',
        '--json',
      ]),
      runCliProcess(['probe', serve.baseUrl, '--method', 'ListTasks', '--max-requests', '5']),
    ]);
    expect(probe.code).toBe(0);
    const report = JSON.parse(probe.stdout.trim()) as {
      admittedBefore: number;
      checks: { name: string; detail: string }[];
    };
    expect(report.admittedBefore).toBe(2);
    expect(report.checks.find((c) => c.name === 'status')?.detail).toBe(
      '429 (mirrored HTTP status: quota)',
    );
    expect(report.checks.find((c) => c.name === 'domain')?.detail).toBe('research.example.com');
    // The notice before the first call, then one line: no limiter, said plainly.
    const [notice, ...rest] = never.stderr.trimEnd().split('\n');
    expect(notice).toBe(
      `probe: at most 5 requests to ${serve.baseUrl}/a2a/jsonrpc: ListTasks until one is refused, then that call once more after its delay; reads only: no task is started. Cap with --max-requests N.`,
    );
    expectOneLineError(
      { code: never.code, stderr: rest.join('\n') },
      /^a2a-ratelimit: no limiter found: all 5 ListTasks calls over jsonrpc were admitted and none was refused/,
    );
  });

  it('a wrong binding address: gRPC probed on the HTTP port says where the gRPC interface is', async () => {
    const serve = await startServeProcess();
    stops.push(() => serve.stop());
    const run = await runCliProcess([
      'probe',
      serve.baseUrl,
      '--binding',
      'grpc',
      '--timeout',
      '2',
    ]);
    expectOneLineError(
      run,
      new RegExp(
        `cannot reach gRPC target 127\\.0\\.0\\.1:${serve.httpPort}.*the card's gRPC interface is ${serve.grpcTarget}: pass .* --grpc-target`,
      ),
    );
  });

  it('--redis shares limits through Redis (skipped when no Redis answers at REDIS_URL, failed under CI=true)', async (ctx) => {
    const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: url.hostname, port: Number(url.port || 6379) });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (!up && process.env.CI === 'true')
      throw new Error(`Redis is required under CI=true: nothing answers at ${url.href}`);
    if (!up) ctx.skip();
    // Keys of its own: under the default `a2arl:` this run would share its published policy set
    // and buckets with any other run, or agent, on the same Redis.
    const prefix = runPrefix('cli-commands');
    // A generous store timeout: the limits are decided in Redis, not by the insurance fallback a
    // loaded machine's 50 ms default can trip.
    const serve = await startServeProcess([
      '--redis',
      url.href,
      '--redis-prefix',
      prefix,
      '--redis-timeout',
      '10000',
    ]);
    const redis = new Redis(url.href);
    try {
      expect(serve.banner).toContain(
        `store       redis ${url.href}, keys ${prefix}* (when Redis fails: insurance)`,
      );
      const run = await runCliProcess([
        'probe',
        serve.baseUrl,
        '--binding',
        'rest',
        '--caller-token',
        `redis-${process.pid}-${Date.now()}`,
      ]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain('PASS  retry');
      // The limits were decided in Redis, under that prefix.
      expect((await redis.keys(`${prefix}*`)).length).toBeGreaterThan(0);
    } finally {
      await serve.stop();
      await deletePrefix(redis, prefix);
      redis.disconnect();
    }
  });
});
