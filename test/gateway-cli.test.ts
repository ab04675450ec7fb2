/**
 * `a2a-ratelimit gateway` as a real process in front of an upstream SDK agent (no limiter of
 * ours): it prints its URLs when ready, serves /healthz, /readyz and /metrics on the admin port,
 * decides with the config's policies, reloads the config on SIGHUP (a bad file keeps the running
 * one and says why in one line), and on SIGTERM drains an open stream before exiting 0.
 */

import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCli } from './cli-process.helpers.js';
import { jsonRpcSend, type SdkUpstream, startSdkUpstream } from './gateway.helpers.js';

const policyYaml = (burst: number) => `policies:
  - name: per-caller
    kind: rate
    scope: caller
    methods: [SendMessage]
    limit: 60
    windowSeconds: 60
    burst: ${burst}
`;

describe('a2a-ratelimit gateway (process)', () => {
  let upstream: SdkUpstream;
  let dir: string;
  let child: ChildProcess;
  let out = '';
  let err = '';
  let url = '';
  let admin = '';
  let exited: Promise<number | null>;

  beforeAll(async () => {
    upstream = await startSdkUpstream();
    dir = await mkdtemp(join(tmpdir(), 'gw-cli-'));
    await writeFile(join(dir, 'gateway.yaml'), policyYaml(1));
    child = spawnCli([
      'gateway',
      '--upstream',
      upstream.baseUrl,
      '--port',
      '0',
      '--admin-port',
      '0',
      '--config',
      join(dir, 'gateway.yaml'),
      '--drain-seconds',
      '20',
    ]);
    exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Press Ctrl-C')) resolve();
      });
      void exited.then((code) => reject(new Error(`exited ${code}: ${out} ${err}`)));
    });
    url = /listening\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] ?? '';
    admin = /admin\s+(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(out)?.[1] ?? '';
  }, 60_000);

  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await upstream?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const send = (id: string, text = 'hi', method = 'SendMessage') =>
    fetch(`${url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: jsonRpcSend(id, text, method),
    });

  it('prints its URLs and answers on the admin port', async () => {
    expect(url).not.toBe('');
    expect(out).toContain(`agent card  ${url}/.well-known/agent-card.json`);
    expect(out).toContain('per-caller (rate, per caller)');
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    expect((await fetch(`${admin}/readyz`)).status).toBe(200);
    const metrics = await fetch(`${admin}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('a2a_ratelimit');
  });

  it('decides with the config, reloads it on SIGHUP, keeps it when the file is bad', async () => {
    const before = upstream.requests.length;
    expect(((await (await send('c-1')).json()) as { result?: unknown }).result).toBeDefined();
    expect(JSON.stringify(await (await send('c-2')).json())).toContain('RATE_LIMIT_EXCEEDED');
    expect(upstream.requests.length - before).toBe(1);

    await writeFile(join(dir, 'gateway.yaml'), 'policies:\n  - name: broken\n    kind: rate\n');
    child.kill('SIGHUP');
    while (!/gateway\.yaml/.test(err)) await new Promise((r) => setTimeout(r, 20));
    expect(
      err
        .trim()
        .split('\n')
        .filter((l) => l.includes('gateway.yaml')),
    ).toHaveLength(1);
    expect(JSON.stringify(await (await send('c-3')).json())).toContain('RATE_LIMIT_EXCEEDED');

    await writeFile(
      join(dir, 'gateway.yaml'),
      policyYaml(1000).replace('limit: 60', 'limit: 6000'),
    );
    child.kill('SIGHUP');
    while (!/version /.test(err)) await new Promise((r) => setTimeout(r, 20));
    expect(((await (await send('c-4')).json()) as { result?: unknown }).result).toBeDefined();
  });

  it('drains an open stream on SIGTERM, then exits 0', async () => {
    const stream = await send('c-5', 'hold', 'SendStreamingMessage');
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"state":"TASK_STATE_WORKING"');
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    expect(child.exitCode).toBeNull();
    upstream.releaseHeld();
    let rest = '';
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      rest += new TextDecoder().decode(next.value);
    }
    expect(rest).toContain('TASK_STATE_COMPLETED');
    expect(await exited).toBe(0);
    expect(out).toContain('stopped on SIGTERM');
  }, 30_000);
});
