/**
 * A hostile caller against the gateway: requests whose bytes the gateway decides one way and the
 * agent behind it reads another (a body charset the agent decodes differently; a tenant named in
 * the body or the query rather than the path), each counted on the upstream's side.
 */

import { connect } from 'node:net';
import type { Policy, RatePolicy } from 'a2a-ratelimit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  requestsSince,
  type SdkUpstream,
  startSdkUpstream,
  startTestGateway,
  type TestGateway,
  textMessageJson,
} from './gateway.helpers.js';

const V1 = { 'a2a-version': '1.0' };

/** One message per caller per hour; reads are free. */
const oneMessage: RatePolicy = {
  name: 'one-message',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  limit: 1,
  windowSeconds: 3600,
  burst: 1,
};

/** One request per tenant per hour on task reads and messages. */
const perTenant: RatePolicy = {
  name: 'per-tenant',
  kind: 'rate',
  scope: 'tenant',
  methods: ['SendMessage', 'GetTask', 'ListTasks'],
  limit: 1,
  windowSeconds: 3600,
  burst: 1,
};

/** `text` in UTF-7 (RFC 2152): one shifted run of its UTF-16BE code units. */
function utf7(text: string): string {
  const units = Buffer.alloc(text.length * 2);
  for (let i = 0; i < text.length; i++) units.writeUInt16BE(text.charCodeAt(i), i * 2);
  return `+${units.toString('base64').replace(/=+$/, '')}-`;
}

async function post(
  gw: TestGateway,
  path: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const r = await fetch(`${gw.baseUrl}${path}`, {
    method: 'POST',
    headers: { ...V1, 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: r.status, text: await r.text() };
}

describe('a body the agent decodes with another charset (upstream: sdk)', () => {
  let upstream: SdkUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startSdkUpstream();
    gw = await startTestGateway(upstream.baseUrl, { policies: [oneMessage] });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('a GetTask hiding a SendMessage in UTF-7 never runs a message', async () => {
    // What the gateway reads as one string value, an agent decoding UTF-7 reads as the end of
    // GetTask's params and a second method and params (JSON.parse keeps the last of each key).
    const hidden = `"},"method":"SendMessage","params":{"message":${JSON.stringify(
      textMessageJson('smuggled', 'hi'),
    )},"z":"`;
    const body = `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t-1","x":"${utf7(hidden)}"}}`;
    for (const charset of ['utf-7', 'UTF-7', '"utf-7"']) {
      const answer = await post(gw, '/a2a/jsonrpc', body, {
        authorization: `Bearer u7-${charset}`,
        'content-type': `application/json; charset=${charset}`,
      });
      expect(answer.status).not.toBe(500);
    }
    // The same through the REST binding: a message the gateway reads as another messageId.
    const rest = `{"message":${JSON.stringify(textMessageJson('first', 'hi'))},"x":"${utf7(
      `","message":${JSON.stringify(textMessageJson('second', 'hi'))},"z":"`,
    )}"}`;
    await post(gw, '/a2a/rest/message:send', rest, {
      authorization: 'Bearer u7-rest',
      'content-type': 'application/json;charset=utf-7',
    });
    expect(upstream.executions.has('smuggled')).toBe(false);
    expect(upstream.executions.has('second')).toBe(false);
  });
});

describe('a REST tenant named in the body or the query (upstream: sdk)', () => {
  let upstream: SdkUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startSdkUpstream();
    gw = await startTestGateway(upstream.baseUrl, { policies: [perTenant] });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('is the tenant decided: a spent tenant’s requests do not reach the agent by another spelling', async () => {
    const auth = { authorization: 'Bearer tenant-caller' };
    const spend = await fetch(`${gw.baseUrl}/a2a/rest/acme/tasks/t-1`, {
      headers: { ...V1, ...auth },
    });
    expect(spend.status).toBe(404); // decided for tenant acme, answered by the agent
    const before = upstream.requests.length;
    const get = (path: string) =>
      fetch(`${gw.baseUrl}${path}`, { headers: { ...V1, ...auth } }).then((r) => r.status);
    // The SDK (as the spec's HTTP transcoding) takes a tenantless route's tenant from its query.
    expect(await get('/a2a/rest/tasks/t-1?tenant=acme')).toBe(429);
    expect(await get('/a2a/rest/tasks/t-1?%74enant=acme')).toBe(429);
    expect(await get('/a2a/rest/tasks?tenant=acme')).toBe(429);
    // Named twice, or twice differently: refused, whatever each agent would keep.
    expect(await get('/a2a/rest/tasks/t-1?tenant=other&tenant=acme')).toBe(400);
    expect(await get('/a2a/rest/other/tasks/t-1?tenant=acme')).toBe(400);
    // And a message's, from its body.
    const message = (id: string, extra: Record<string, unknown>) =>
      JSON.stringify({ ...extra, message: textMessageJson(id, 'hi') });
    const first = await post(
      gw,
      '/a2a/rest/message:send',
      message('t-a', { tenant: 'acme' }),
      auth,
    );
    expect(first.status).toBe(429);
    const mismatch = await post(
      gw,
      '/a2a/rest/other/message:send',
      message('t-b', { tenant: 'acme' }),
      auth,
    );
    expect(mismatch.status).toBe(400);
    const notString = await post(gw, '/a2a/rest/message:send', message('t-c', { tenant: 7 }), auth);
    expect(notString.status).toBe(400);
    expect(await requestsSince(upstream, before)).toEqual([]);
    expect(upstream.executions.size).toBe(0);
    // Under A2A 1.0 a `/v1/...` path is tenant `v1`'s route (the v0.3 routes are for v0.3
    // requests, as the SDK routes them): decided as that tenant's.
    const v1 = await fetch(`${gw.baseUrl}/a2a/rest/v1/tasks`, { headers: { ...V1, ...auth } });
    expect(v1.status).not.toBe(429); // spends tenant v1
    const asV1 = await post(gw, '/a2a/rest/v1/message:send', message('t-v1', {}), auth);
    expect(asV1.status).toBe(429);
    expect(upstream.executions.has('t-v1')).toBe(false);
    // A tenant named in the path and again, the same, in the body or query is that tenant.
    const same = await fetch(`${gw.baseUrl}/a2a/rest/fresh/tasks/t-1?tenant=fresh`, {
      headers: { ...V1, ...auth },
    });
    expect(same.status).toBe(404);
  });
});

describe('a task’s usage report, when its run is polled (upstream: sdk)', () => {
  /** 10,000 tokens an hour, 2,000 reserved per message; the agent reports 9,000 per task. */
  const tokens = {
    name: 'tokens',
    kind: 'rate',
    unit: 'tokens',
    scope: 'caller',
    methods: ['SendMessage'],
    limit: 10_000,
    windowSeconds: 3600,
    estimate: 2_000,
  } as Policy;
  const tasks: Policy = { name: 'tasks', kind: 'concurrency', methods: ['SendMessage'], max: 5 };
  const guard: Policy = { name: 'guard', kind: 'overload', maxInFlight: 100 };

  it('is charged to the caller whose message started it, GetTask polls or not', async () => {
    const upstream = await startSdkUpstream({ usageTokens: 9_000 });
    const gw = await startTestGateway(upstream.baseUrl, {
      policies: [tokens, tasks, guard],
      gateway: { usage: { path: 'metadata.usage.totalTokens' } },
    });
    try {
      const rpc = async (body: Record<string, unknown>) => {
        const answer = await post(gw, '/a2a/jsonrpc', JSON.stringify({ jsonrpc: '2.0', ...body }), {
          authorization: 'Bearer alice',
        });
        return JSON.parse(answer.text) as {
          result?: { task?: { id: string }; status?: { state: string } };
          error?: { message: string };
        };
      };
      const started = await rpc({
        id: 1,
        method: 'SendMessage',
        params: {
          message: textMessageJson('polled-1', 'hold'),
          configuration: { returnImmediately: true },
        },
      });
      const taskId = started.result?.task?.id as string;
      // The caller polls its task while it runs (an admission the overload guard holds).
      const polled = await rpc({ id: 2, method: 'GetTask', params: { id: taskId } });
      expect(polled.result?.status?.state).toBe('TASK_STATE_WORKING');
      await upstream.releaseHeld();
      const done = () => rpc({ id: 3, method: 'GetTask', params: { id: taskId } });
      while ((await done()).result?.status?.state !== 'TASK_STATE_COMPLETED') {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // 9,000 charged: 1,000 left, less than a message's 2,000 reservation (a message may pass
      // while the report's charge is on its way; uncharged, four would).
      let admitted = 0;
      for (const id of ['polled-2', 'polled-3', 'polled-4']) {
        const next = await rpc({
          id,
          method: 'SendMessage',
          params: { message: textMessageJson(id, 'hi') },
        });
        if (next.error === undefined) admitted++;
      }
      expect(admitted).toBeLessThanOrEqual(1);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});

describe('protobuf JSON spellings the agent reads and the gateway must too (upstream: sdk)', () => {
  let upstream: SdkUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startSdkUpstream();
    gw = await startTestGateway(upstream.baseUrl, {
      policies: [{ ...oneMessage, limit: 100, burst: 100 }],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });
  const rpc = (params: Record<string, unknown>, caller: string) =>
    post(
      gw,
      '/a2a/jsonrpc',
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params }),
      { authorization: `Bearer ${caller}` },
    );

  it('a push URL under its proto field name is checked (never reaches the agent unchecked)', async () => {
    const before = upstream.requests.length;
    const hook = { url: 'http://169.254.169.254/latest/meta-data' };
    const snake = await rpc(
      {
        message: textMessageJson('snake-push-1', 'hi'),
        configuration: { task_push_notification_config: hook },
      },
      'snake-push',
    );
    expect(JSON.parse(snake.text).error?.code).toBe(-32602);
    const rest = await post(
      gw,
      '/a2a/rest/tasks/t-1/pushNotificationConfigs',
      JSON.stringify({ push_notification_config: hook }),
      { authorization: 'Bearer snake-push-rest' },
    );
    expect(rest.status).toBe(400);
    expect(upstream.requests.slice(before)).toEqual([]);
  });

  it('a messageId under its proto field name, or not a string, is not a way to run a message twice', async () => {
    const message = (extra: Record<string, unknown>) => ({
      role: 'ROLE_USER',
      parts: [{ text: 'hi' }],
      ...extra,
    });
    // One message per caller: a copy named the other way is the same message, or refused.
    for (const [caller, spelling] of [
      ['snake-id', { message_id: 'twice-1' }],
      ['number-id', { messageId: 4242 }],
      ['both-ids', { messageId: null, message_id: 'twice-3' }],
    ] as const) {
      await rpc({ message: message(spelling) }, caller);
      await rpc({ message: message(spelling) }, caller);
    }
    for (const id of ['twice-1', '4242', 'twice-3']) {
      expect(upstream.executions.get(id) ?? 0, id).toBeLessThanOrEqual(1);
    }
  });
});

describe('HTTP/1.1 framing a front proxy and the gateway could read differently (upstream: sdk)', () => {
  let upstream: SdkUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startSdkUpstream();
    gw = await startTestGateway(upstream.baseUrl, { policies: [oneMessage] });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  /** Writes `raw` on one connection, half-closes, and reads until the gateway closes. */
  const exchange = (raw: string): Promise<string> =>
    new Promise((resolve) => {
      const port = Number(new URL(gw.baseUrl).port);
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (d) => {
        text += d.toString('latin1');
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(text));
      socket.end(raw);
    });

  it('a spent caller’s message reaches the agent under no framing (TE + CL, two CLs, obs-fold, pipelining)', async () => {
    const auth = 'Authorization: Bearer smuggler\r\na2a-version: 1.0\r\n';
    const send = (id: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'SendMessage',
        params: { message: textMessageJson(id, 'hi') },
      });
    const first = await post(gw, '/a2a/jsonrpc', send('sm-0'), {
      authorization: 'Bearer smuggler',
    });
    expect(first.status).toBe(200);
    const before = upstream.requests.length;
    const body = send('sm-1');
    const inner = `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${send('sm-2').length}\r\n\r\n${send('sm-2')}`;
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const head = `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\n`;
    const answers = await Promise.all([
      exchange(`${head}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n${chunked}${inner}`),
      exchange(`${head}Content-Length: ${body.length}\r\nContent-Length: 4\r\n\r\n${body}`),
      exchange(`${head}X-Folded: a\r\n b\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
      exchange(`${head}Transfer-Encoding: chunked\r\n\r\n${chunked}${inner}`),
      exchange(`${head}Transfer-Encoding: identity, chunked\r\n\r\n${chunked}`),
    ]);
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 (400|429|200) /);
    expect(upstream.requests.slice(before)).toEqual([]);
    expect([...upstream.executions.keys()]).toEqual(['sm-0']);
  });
});

describe('push URLs of a caller already refused (upstream: sdk)', () => {
  it('are not resolved: a refusal costs no DNS lookup', async () => {
    const upstream = await startSdkUpstream();
    const looked: string[] = [];
    const gw = await startTestGateway(upstream.baseUrl, {
      policies: [oneMessage],
      gateway: {
        resolveHost: async (host) => {
          looked.push(host);
          return ['93.184.216.34'];
        },
      },
    });
    try {
      const send = (i: number) =>
        post(
          gw,
          '/a2a/jsonrpc',
          JSON.stringify({
            jsonrpc: '2.0',
            id: i,
            method: 'SendMessage',
            params: {
              message: textMessageJson(`dns-${i}`, 'hi'),
              configuration: { taskPushNotificationConfig: { url: `https://h${i}.example/hook` } },
            },
          }),
          { authorization: 'Bearer dns-caller' },
        );
      for (let i = 0; i < 5; i++) await send(i);
      // The first was admitted (its URL checked); the four refused cost no lookup.
      expect(looked).toEqual(['h0.example']);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});
