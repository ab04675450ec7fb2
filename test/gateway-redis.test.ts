/**
 * Two gateways on one Redis in front of one upstream (no limiter of ours): they share every limit
 * and deduplicate across each other — a caller's burst spent through one is spent through the
 * other, and a copy of a message admitted by one, sent to the other, gets the first copy's task
 * without reaching the upstream again. The upstream is a parameter.
 */

import type { Policy } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectRedis,
  deletePrefix,
  probeRedis,
  REDIS_URL,
  requireOrSkip,
  runPrefix,
} from './fixtures/redis/redis-env.js';
import {
  GATEWAY_UPSTREAMS,
  type GatewayUpstream,
  startTestGateway,
  type TestGateway,
  textMessageJson,
} from './gateway.helpers.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const UPSTREAMS = GATEWAY_UPSTREAMS;
const POLICIES: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage'],
    limit: 60,
    windowSeconds: 60,
    burst: 2,
  },
];

describe.skipIf(!redisUp).each(UPSTREAMS)(
  'two gateways on one Redis (upstream: %s)',
  (_n, start) => {
    const prefix = runPrefix('gateway');
    const clients: Redis[] = [];
    let upstream: GatewayUpstream;
    let one: TestGateway;
    let two: TestGateway;

    const gatewayOnRedis = async (): Promise<TestGateway> => {
      const client = await connectRedis();
      clients.push(client);
      const store = new RedisStore({
        client,
        policies: POLICIES,
        keyPrefix: prefix,
        onError: 'fail-closed',
        // A slow Redis on a loaded machine is not what these tests are about: no 50 ms refusals.
        timeoutMs: 5_000,
      });
      return startTestGateway(upstream.baseUrl, { policies: POLICIES, limiter: { store } });
    };

    beforeAll(async () => {
      upstream = await start();
      one = await gatewayOnRedis();
      two = await gatewayOnRedis();
    });
    afterAll(async () => {
      await one?.close();
      await two?.close();
      await upstream?.close();
      const cleanup = await connectRedis();
      await deletePrefix(cleanup, prefix);
      cleanup.disconnect();
      for (const c of clients) c.disconnect();
    });

    /** SendMessage through `gw` on `binding`; its result (JSON-RPC `result`, the REST body). */
    const send = async (
      gw: TestGateway,
      binding: 'jsonrpc' | 'rest',
      caller: string,
      messageId: string,
      text = 'hi',
    ) => {
      const params = {
        message: textMessageJson(messageId, text),
        configuration: { returnImmediately: true },
      };
      const rest = binding === 'rest';
      const r = await fetch(`${gw.baseUrl}/a2a/${rest ? 'rest/message:send' : 'jsonrpc'}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'a2a-version': '1.0',
          authorization: `Bearer ${caller}`,
        },
        body: JSON.stringify(
          rest ? params : { jsonrpc: '2.0', id: messageId, method: 'SendMessage', params },
        ),
      });
      const answer = (await r.json()) as Record<string, unknown>;
      return {
        text: JSON.stringify(answer),
        result: (rest ? (r.ok ? answer : undefined) : answer.result) as
          | { task?: { id: string } }
          | undefined,
      };
    };
    const runsOf = async (prefix: string) =>
      Object.entries((await upstream.seen()).runs).filter(([id]) => id.startsWith(prefix));

    it.each(['jsonrpc', 'rest'] as const)('%s: share a caller’s limit', async (binding) => {
      const caller = `carol-${binding}`;
      expect((await send(one, binding, caller, `${binding}-l-1`)).result).toBeDefined();
      expect((await send(two, binding, caller, `${binding}-l-2`)).result).toBeDefined();
      expect((await send(one, binding, caller, `${binding}-l-3`)).text).toContain(
        'RATE_LIMIT_EXCEEDED',
      );
      expect((await send(two, binding, caller, `${binding}-l-4`)).text).toContain(
        'RATE_LIMIT_EXCEEDED',
      );
      expect(await runsOf(`${binding}-l-`)).toEqual([
        [`${binding}-l-1`, 1],
        [`${binding}-l-2`, 1],
      ]);
    });

    it.each(['jsonrpc', 'rest'] as const)(
      '%s: deduplicate a message across each other',
      async (binding) => {
        const caller = `dave-${binding}`;
        const first = await send(one, binding, caller, `${binding}-x-1`, 'hold');
        const copy = await send(two, binding, caller, `${binding}-x-1`, 'hold');
        expect(first.result?.task?.id).toBeDefined();
        expect(copy.result?.task?.id).toBe(first.result?.task?.id);
        expect(await runsOf(`${binding}-x-`)).toEqual([[`${binding}-x-1`, 1]]);
        await upstream.releaseHeld();
      },
    );
  },
);
