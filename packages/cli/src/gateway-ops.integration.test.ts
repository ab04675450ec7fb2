/**
 * The gateway's operations, as a real process in front of the SDK's agent: the upstream latency
 * histogram and failure counter on the admin port's `/metrics` (counts matching the calls made;
 * `status="error"` once the agent is down), one refusal line per refusal on stderr (`logRefusals:`
 * in the config) that a caller-chosen tenant cannot split or forge, and bodies over the
 * limit answered 413 in JSON on both bindings (JSON-RPC: an error object), never forwarded.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SdkUpstream,
  startSdkUpstream,
  textMessageJson,
} from '../../../test/gateway.helpers.js';
import { type GatewayProcess, startGatewayProcess } from '../../../test/gateway-process.helpers.js';
import { parseGatewayOptions } from './gateway-command.js';
import { parseGatewayConfig } from './gateway-config.js';

const config = `logRefusals: true
identity:
  trustedHeader: { name: x-caller, fromCidrs: [127.0.0.1/32] }
policies:
  - name: per-caller
    kind: rate
    scope: caller
    methods: [SendMessage]
    limit: 1
    windowSeconds: 3600
    burst: 2
`;

/** The value of one sample of `/metrics` text (labels in any order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const pairs = new Set((match[2] ?? '').split(','));
    if (Object.entries(labels).every(([k, v]) => pairs.has(`${k}="${v}"`))) {
      return Number(match[3]);
    }
  }
  return undefined;
}

describe('a2a-ratelimit gateway operations (process)', () => {
  let upstream: SdkUpstream;
  let dir: string;
  let gw: GatewayProcess;

  beforeAll(async () => {
    upstream = await startSdkUpstream();
    dir = await mkdtemp(join(tmpdir(), 'gw-ops-'));
    await writeFile(join(dir, 'gateway.yaml'), config);
    gw = await startGatewayProcess([
      '--upstream',
      upstream.baseUrl,
      '--admin-port',
      '0',
      '--config',
      join(dir, 'gateway.yaml'),
    ]);
  }, 60_000);

  afterAll(async () => {
    await gw?.stop('SIGKILL');
    await upstream?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const jsonRpc = (caller: string, id: string, params: Record<string, unknown> = {}) =>
    fetch(`${gw.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-caller': caller },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'SendMessage',
        params: { message: textMessageJson(id, 'hi'), ...params },
      }),
    });
  const rest = (caller: string, method: string, path: string, body?: string) =>
    fetch(`${gw.url}/a2a/rest${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-caller': caller },
      ...(body === undefined ? {} : { body }),
    });
  const metrics = async () => (await fetch(`${gw.adminUrl}/metrics`)).text();
  const refusalLines = () =>
    gw
      .stderr()
      .split('\n')
      .filter((l) => / refused /.test(l));

  it('counts upstream answers by binding, method and status; logs each refusal in one line', async () => {
    const before = upstream.requests.length;
    expect((await jsonRpc('alice', 'a-1')).status).toBe(200);
    expect((await jsonRpc('alice', 'a-2')).status).toBe(200);
    const refused = await rest(
      'alice',
      'POST',
      '/message:send',
      JSON.stringify({ message: textMessageJson('a-3', 'hi') }),
    );
    expect(refused.status).toBe(429);
    // The agent's own 404 (no such task) passes through and is counted under its status.
    expect((await rest('alice', 'GET', '/tasks/no-such-task')).status).toBe(404);
    expect(upstream.requests.length - before).toBe(3);

    const text = await metrics();
    const seconds = 'a2a_ratelimit_gateway_upstream_seconds_count';
    expect(
      sample(text, seconds, { binding: 'jsonrpc', method: 'SendMessage', status: '200' }),
    ).toBe(2);
    expect(sample(text, seconds, { binding: 'rest', method: 'GetTask', status: '404' })).toBe(1);
    expect(sample(text, seconds, { binding: 'rest', method: 'SendMessage', status: '200' })).toBe(
      undefined,
    );
    expect(text).toContain('# TYPE a2a_ratelimit_gateway_upstream_seconds histogram');
    expect(text).toContain('a2a_ratelimit_rejections_total');

    // One line per refusal, with the refusal's facts.
    await gw.untilStderr(/ refused .*caller="alice"/);
    const [line] = refusalLines();
    expect(refusalLines()).toHaveLength(1);
    expect(line).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z refused status=429 reason=RATE_LIMIT_EXCEEDED policy=per-caller retryAfterMs=\d+ method=SendMessage binding=rest caller="alice"$/,
    );
  });

  it('a caller-chosen tenant cannot forge a line (names are escaped alike: refusal-line.test.ts)', async () => {
    const evil = 'eve';
    for (const id of ['e-1', 'e-2']) expect((await jsonRpc(evil, id)).status).toBe(200);
    const tenant = 'acme\n2026-01-01T00:00:00.000Z refused caller="bob"';
    const refused = await jsonRpc(evil, 'e-3', { tenant });
    expect(JSON.stringify(await refused.json())).toContain('RATE_LIMIT_EXCEEDED');
    await gw.untilStderr(/caller="eve.*\n/);
    const lines = refusalLines();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(
      'binding=jsonrpc caller="eve" tenant="acme\\u000a2026-01-01T00:00:00.000Z refused caller=\\"bob\\""',
    );
    expect(gw.stderr()).not.toMatch(/^2026-01-01/m);
  });

  it('answers a body over the limit with 413 in JSON on both bindings, forwarding nothing', async () => {
    const before = upstream.requests.length;
    const big = 'x'.repeat(1_100_000);
    const overJsonRpc = await jsonRpc('big', 'b-1', { metadata: { big } });
    expect(overJsonRpc.status).toBe(413);
    expect(overJsonRpc.headers.get('content-type')).toContain('json');
    const rpc = (await overJsonRpc.json()) as {
      jsonrpc: string;
      id: unknown;
      error: { code: number; message: string };
    };
    expect(rpc.jsonrpc).toBe('2.0');
    expect(rpc.id).toBeNull();
    expect(rpc.error.code).toBe(-32600);
    expect(rpc.error.message).toContain('larger than 1048576 bytes');

    const overRest = await rest(
      'big',
      'POST',
      '/message:send',
      JSON.stringify({ message: textMessageJson('b-2', big) }),
    );
    expect(overRest.status).toBe(413);
    expect(overRest.headers.get('content-type')).toContain('json');
    const status = (await overRest.json()) as { error: { code: number; message: string } };
    expect(status.error.code).toBe(413);
    expect(status.error.message).toContain('larger than 1048576 bytes');
    expect(upstream.requests.length).toBe(before);
  });

  it('counts an unreachable upstream as status="error" and logs its 503', async () => {
    await upstream.close();
    const down = await jsonRpc('carol', 'c-1');
    const body = JSON.stringify(await down.json());
    expect(body).toContain('AGENT_UNAVAILABLE');
    const text = await metrics();
    expect(
      sample(text, 'a2a_ratelimit_gateway_upstream_seconds_count', {
        binding: 'jsonrpc',
        method: 'SendMessage',
        status: 'error',
      }),
    ).toBe(1);
    expect(
      sample(text, 'a2a_ratelimit_gateway_upstream_errors_total', {
        binding: 'jsonrpc',
        method: 'SendMessage',
        error: 'unreachable',
      }),
    ).toBe(1);
    await gw.untilStderr(/reason=AGENT_UNAVAILABLE.*\n/);
    expect(refusalLines().at(-1)).toMatch(
      /refused status=503 reason=AGENT_UNAVAILABLE policy=upstream retryAfterMs=1000 method=SendMessage binding=jsonrpc caller="carol"$/,
    );
  });

  it('--log-refusals and logRefusals: are parsed; a bad value is refused', () => {
    const policy = { name: 'p', kind: 'rate', limit: 1, windowSeconds: 60 };
    expect(parseGatewayOptions({ upstream: 'http://127.0.0.1:9' }).logRefusals).toBe(false);
    expect(
      parseGatewayOptions({ upstream: 'http://127.0.0.1:9', logRefusals: true }).logRefusals,
    ).toBe(true);
    expect(
      parseGatewayConfig({ policies: [policy], logRefusals: true }, 'g.yaml').logRefusals,
    ).toBe(true);
    expect(() => parseGatewayConfig({ policies: [policy], logRefusals: 'yes' }, 'g.yaml')).toThrow(
      'g.yaml: logRefusals: must be true or false',
    );
  });
});
