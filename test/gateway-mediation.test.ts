/**
 * The upstream receives exactly what the gateway decided. A caller that has spent its limit on
 * every method sends the upstream nothing under a mediation fuzz — path case, `//`, trailing
 * slashes, HEAD, percent-encodings, body encodings, duplicate JSON keys, batches, v0.3 names —
 * counted on the upstream's side; the card is served rewritten with the rate-limit extension; a
 * refused webhook never reaches the agent; the upstream's failures come back in the seed's shape
 * (down → 503 AGENT_UNAVAILABLE with Retry-After; its own 429 Retry-After: 3 → our 429 with
 * RetryInfo 3 s) on both bindings.
 */

import type { RatePolicy } from 'a2a-ratelimit';
import { ALL_A2A_METHODS } from 'a2a-ratelimit';
import { RATE_LIMIT_EXTENSION_URI } from 'a2a-ratelimit/server';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GATEWAY_UPSTREAMS,
  type GatewayUpstream,
  jsonRpcSend,
  requestsSince,
  startTestGateway,
  type TestGateway,
  textMessageJson,
} from './gateway.helpers.js';
import { decodeJsonRpcRejection, decodeRestRejection } from './rejection-wire.helpers.js';

const UPSTREAMS = GATEWAY_UPSTREAMS;
const V1 = { 'a2a-version': '1.0' };

/** One request per caller per hour on every method. */
const spent: RatePolicy = {
  name: 'everything',
  kind: 'rate',
  scope: 'caller',
  methods: [...ALL_A2A_METHODS],
  limit: 1,
  windowSeconds: 3600,
  burst: 1,
};

async function send(
  gw: TestGateway,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const r = await fetch(`${gw.baseUrl}${path}`, {
    method,
    headers: {
      ...V1,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body }),
  });
  return { status: r.status, headers: r.headers, text: await r.text() };
}

describe.each(UPSTREAMS)('mediation through the gateway (upstream: %s)', (_name, start) => {
  let upstream: GatewayUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await start();
    gw = await startTestGateway(upstream.baseUrl, { policies: [spent] });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('serves the upstream card with its interfaces on the gateway and the rate-limit extension', async () => {
    const card = (await (await fetch(`${gw.baseUrl}/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { url: string; protocolBinding: string }[];
      capabilities: { extensions: { uri: string; params: { policies: { name: string }[] } }[] };
    };
    expect(card.supportedInterfaces.map((i) => [i.protocolBinding, i.url])).toEqual([
      ['JSONRPC', `${gw.baseUrl}/a2a/jsonrpc`],
      ['HTTP+JSON', `${gw.baseUrl}/a2a/rest`],
    ]);
    const extension = card.capabilities.extensions.find((e) => e.uri === RATE_LIMIT_EXTENSION_URI);
    expect(extension?.params.policies.map((p) => p.name)).toEqual(['everything']);
  });

  it('a spent caller makes the upstream run nothing, however the request is spelled', async () => {
    const auth = { authorization: 'Bearer spent' };
    // Spend the caller's one request.
    const first = await send(gw, 'GET', '/a2a/rest/tasks/none', undefined, auth);
    expect(first.status).toBe(404); // the upstream's own answer: it does not know the task
    const seen = (await upstream.seen()).requests;
    const message = (id: string) => JSON.stringify({ message: textMessageJson(id, 'hi') });
    const fixed: [string, string, string | undefined, Record<string, string>?][] = [
      ['POST', '/a2a/jsonrpc', jsonRpcSend('j1')],
      ['POST', '/A2A/JSONRPC', jsonRpcSend('j2')],
      ['POST', '/a2a/jsonrpc/', jsonRpcSend('j3')],
      ['POST', '/a2a/jsonrpc?x=1', jsonRpcSend('j4')],
      ['POST', '//a2a/jsonrpc', jsonRpcSend('j5')],
      ['POST', '/a2a//jsonrpc', jsonRpcSend('j6')],
      ['POST', '/a2a/%6Asonrpc', jsonRpcSend('j7')],
      ['POST', '/a2a/jsonrpc', jsonRpcSend('j8', 'hi', 'message/send')],
      ['POST', '/a2a/jsonrpc', jsonRpcSend('j9', 'hi', 'tasks/get')],
      ['POST', '/a2a/jsonrpc', `[${jsonRpcSend('j10')}]`],
      [
        'POST',
        '/a2a/jsonrpc',
        '{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"SendMessage","params":{}}',
      ],
      [
        'POST',
        '/a2a/jsonrpc',
        '{"jsonrpc":"2.0","id":1,"method":"GetTask","\\u006dethod":"SendMessage","params":{}}',
      ],
      ['POST', '/a2a/jsonrpc', '{"jsonrpc":"2.0","id":1,"method":["SendMessage"],"params":{}}'],
      ['POST', '/a2a/jsonrpc', '{"jsonrpc":"2.0","id":1,"method":"Nope","params":{}}'],
      ['POST', '/a2a/jsonrpc', jsonRpcSend('j11'), { 'content-encoding': 'gzip' }],
      ['POST', '/a2a/jsonrpc', jsonRpcSend('j12'), { 'content-type': 'text/plain' }],
      ['GET', '/a2a/jsonrpc', undefined],
      ['POST', '/a2a/rest/message:send', message('r1')],
      ['POST', '/a2a/rest/MESSAGE:SEND', message('r2')],
      ['POST', '/a2a/rest/message:send/', message('r3')],
      ['POST', '/A2A/Rest/message:send', message('r4')],
      ['POST', '/a2a/rest//message:send', message('r5')],
      ['POST', '/a2a/rest/v1/message:send', message('r6')],
      ['POST', '/a2a/rest/acme/message:send', message('r7')],
      ['POST', '/a2a/rest/message%3Asend', message('r8')],
      [
        'POST',
        '/a2a/rest/message:send',
        '{"message":{"messageId":"a"},"message":{"messageId":"b"}}',
      ],
      ['HEAD', '/a2a/rest/tasks/t-1', undefined],
      ['GET', '/a2a/rest/tasks/t-1/', undefined],
      ['GET', '/a2a/rest/TASKS', undefined],
      ['GET', '/a2a/rest/tasks/%ff', undefined],
      ['DELETE', '/a2a/rest/message:send', undefined],
      ['POST', '/a2a/rest/tasks/t-1:cancel', '{}'],
      ['GET', '/a2a/rest/extendedAgentCard', undefined],
      ['GET', '/admin', undefined],
      ['POST', '/', jsonRpcSend('x')],
    ];
    for (const [method, path, body, headers] of fixed) {
      const answer = await send(gw, method, path, body, { ...auth, ...headers });
      expect(answer.status, `${method} ${path}`).not.toBe(500);
    }
    expect(await requestsSince(upstream, seen)).toEqual([]);
    expect((await upstream.seen()).runs).toEqual({});

    // And any spelling of the REST path: case flips, doubled or trailing slashes, escapes.
    const spellings = fc.array(
      fc.tuple(
        fc.constantFrom(
          '/a2a/rest/message:send',
          '/a2a/rest/tasks/t-2',
          '/a2a/rest/tasks/t-2:cancel',
          '/a2a/jsonrpc',
        ),
        fc.array(fc.nat(40), { maxLength: 4 }),
        fc.constantFrom('', '/', '//', '?a=1', '%20'),
        fc.constantFrom('GET', 'POST', 'HEAD', 'DELETE', 'PUT'),
      ),
      { minLength: 1, maxLength: 8 },
    );
    await fc.assert(
      fc.asyncProperty(spellings, async (requests) => {
        for (const [base, flips, tail, verb] of requests) {
          let path = base;
          for (const at of flips) {
            const i = at % path.length;
            const c = path[i] as string;
            path =
              path.slice(0, i) +
              (c === c.toLowerCase() ? c.toUpperCase() : `%${c.charCodeAt(0).toString(16)}`) +
              path.slice(i + 1);
          }
          const body = verb === 'POST' ? jsonRpcSend(`f-${path}`) : undefined;
          await send(gw, verb, path + tail, body, auth);
        }
        return (await upstream.seen()).requests === seen;
      }),
      { numRuns: 25 },
    );
    expect(await requestsSince(upstream, seen)).toEqual([]);
  });

  it('an admitted request is forwarded in its canonical spelling', async () => {
    const before = (await upstream.seen()).requests;
    const one = await send(gw, 'GET', '/A2A/REST/Tasks/t%2D9/', undefined, {
      authorization: 'Bearer canon-1',
    });
    expect(one.status).toBe(404);
    const two = await send(
      gw,
      'POST',
      '/A2A/JSONRPC/',
      '{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t-9"}}',
      { authorization: 'Bearer canon-2' },
    );
    expect(two.status).toBe(200);
    expect(await requestsSince(upstream, before)).toEqual([
      'GET /a2a/rest/tasks/t-9',
      'POST /a2a/jsonrpc',
    ]);
  });

  it('a push config whose webhook fails the SSRF policy never reaches the agent', async () => {
    const before = (await upstream.seen()).requests;
    const jsonRpc = await send(
      gw,
      'POST',
      '/a2a/jsonrpc',
      JSON.stringify({
        jsonrpc: '2.0',
        id: 5,
        method: 'SendMessage',
        params: {
          message: textMessageJson('push-1', 'hi'),
          configuration: { taskPushNotificationConfig: { url: 'http://169.254.169.254/latest' } },
        },
      }),
      { authorization: 'Bearer push-a' },
    );
    expect(JSON.parse(jsonRpc.text).error.code).toBe(-32602);
    const rest = await send(
      gw,
      'POST',
      '/a2a/rest/tasks/t-1/pushNotificationConfigs',
      JSON.stringify({ taskId: 't-1', url: 'http://localhost:8080/hook' }),
      { authorization: 'Bearer push-b' },
    );
    expect(rest.status).toBe(400);
    expect(JSON.parse(rest.text).error.message).toMatch(/push notification URL refused/);
    expect(await requestsSince(upstream, before)).toEqual([]);
  });
});

describe.each(UPSTREAMS)(
  'the upstream’s failures in the seed’s shape (upstream: %s)',
  (_n, start) => {
    const unlimited: RatePolicy = { ...spent, limit: 1000, burst: 1000 };

    it('upstream down → 503 with Retry-After and AGENT_UNAVAILABLE, in each binding’s format', async () => {
      const upstream = await start();
      const gw = await startTestGateway(upstream.baseUrl, {
        policies: [unlimited],
        gateway: { unavailableRetryAfterMs: 2_000 },
      });
      try {
        await upstream.die();
        const rest = await send(
          gw,
          'POST',
          '/a2a/rest/message:send',
          JSON.stringify({ message: textMessageJson('d-1', 'hi') }),
        );
        expect(rest.status).toBe(503);
        expect(rest.headers.get('retry-after')).toBe('2');
        const restDecoded = decodeRestRejection(rest.status, rest.headers, rest.text);
        expect(restDecoded).toMatchObject({ kind: 'overload', delaySeconds: 2 });
        expect(rest.text).toContain('"reason":"AGENT_UNAVAILABLE"');
        expect(rest.text).toContain('"domain":"gateway.example.com"');
        const rpc = await send(gw, 'POST', '/a2a/jsonrpc', jsonRpcSend('d-2'));
        expect(rpc.status).toBe(200);
        expect(rpc.headers.get('retry-after')).toBe('2');
        const body = JSON.parse(rpc.text);
        expect(body.id).toBe('d-2');
        expect(rpc.text).toContain('AGENT_UNAVAILABLE');
        expect(decodeJsonRpcRejection(rpc.status, rpc.headers, rpc.text)).toMatchObject({
          kind: 'overload',
          delaySeconds: 2,
        });
      } finally {
        await gw.close();
        await upstream.close();
      }
    });

    describe('an upstream that answers 429 / 503 with Retry-After', () => {
      let upstream: GatewayUpstream;
      let gw: TestGateway;
      beforeAll(async () => {
        upstream = await start();
        gw = await startTestGateway(upstream.baseUrl, { policies: [unlimited] });
      });
      afterAll(async () => {
        await gw?.close();
        await upstream?.close();
      });

      it('its 429 Retry-After: 3 → our 429 with RetryInfo 3 s (REST) and our JSON-RPC rejection', async () => {
        await upstream.reject(429, 3);
        const rest = await send(gw, 'GET', '/a2a/rest/tasks/t-1');
        expect(rest.status).toBe(429);
        expect(rest.headers.get('retry-after')).toBe('3');
        expect(decodeRestRejection(rest.status, rest.headers, rest.text)).toMatchObject({
          kind: 'quota',
          delaySeconds: 3,
        });
        expect(rest.text).toContain('"retryDelay":"3s"');
        const rpc = await send(
          gw,
          'POST',
          '/a2a/jsonrpc',
          '{"jsonrpc":"2.0","id":9,"method":"GetTask","params":{"id":"t"}}',
        );
        const body = JSON.parse(rpc.text);
        expect(body.id).toBe(9);
        expect(rpc.text).toContain('"retryDelay":"3s"');
        expect(decodeJsonRpcRejection(rpc.status, rpc.headers, rpc.text)).toMatchObject({
          kind: 'quota',
          delaySeconds: 3,
        });
      });

      it('its 503 Retry-After: 3 → our overload rejection with 3 s, in each binding’s format', async () => {
        await upstream.reject(503, 3);
        const rest = await send(gw, 'GET', '/a2a/rest/tasks/t-1');
        expect(rest.status).toBe(503);
        expect(decodeRestRejection(rest.status, rest.headers, rest.text)).toMatchObject({
          kind: 'overload',
          delaySeconds: 3,
        });
        const rpc = await send(
          gw,
          'POST',
          '/a2a/jsonrpc',
          '{"jsonrpc":"2.0","id":10,"method":"GetTask","params":{"id":"t"}}',
        );
        expect(decodeJsonRpcRejection(rpc.status, rpc.headers, rpc.text)).toMatchObject({
          kind: 'overload',
          delaySeconds: 3,
        });
      });
    });
  },
);
