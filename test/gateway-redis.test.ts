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
  type GatewayUpstream,
  jsonRpcSend,
  type StartUpstream,
  startSdkUpstream,
  startTestGateway,
  type TestGateway,
  textMessageJson,
} from './gateway.helpers.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const UPSTREAMS: readonly (readonly [string, StartUpstream])[] = [['sdk', startSdkUpstream]];
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

    const post = async (gw: TestGateway, body: string, caller: string) => {
      const r = await fetch(`${gw.baseUrl}/a2a/jsonrpc`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'a2a-version': '1.0',
          authorization: `Bearer ${caller}`,
        },
        body,
      });
      return (await r.json()) as { result?: { task?: { id: string } }; error?: unknown };
    };

    it('share a caller’s limit', async () => {
      expect((await post(one, jsonRpcSend('l-1'), 'carol')).result).toBeDefined();
      expect((await post(two, jsonRpcSend('l-2'), 'carol')).result).toBeDefined();
      expect(JSON.stringify(await post(one, jsonRpcSend('l-3'), 'carol'))).toContain(
        'RATE_LIMIT_EXCEEDED',
      );
      expect(JSON.stringify(await post(two, jsonRpcSend('l-4'), 'carol'))).toContain(
        'RATE_LIMIT_EXCEEDED',
      );
      expect(upstream.executions.size).toBe(2);
    });

    it('deduplicate a message across each other', async () => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: textMessageJson('x-1', 'hold'),
          configuration: { returnImmediately: true },
        },
      });
      const first = await post(one, body, 'dave');
      const copy = await post(two, body, 'dave');
      expect(copy.result?.task?.id).toBe(first.result?.task?.id);
      expect(upstream.executions.get('x-1')).toBe(1);
      upstream.releaseHeld();
    });
  },
);
