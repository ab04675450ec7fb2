/**
 * Attack: what a `RedisStore` adopts from `<prefix>policy-set` when that hash is written by hand
 * (no publisher: a leftover, a wrong tool, a compromised neighbour on a shared Redis). Garbage
 * must not crash the store or open its limits; a well-formed set that drops every policy (or
 * raises them a millionfold) is adopted today with no check at all.
 */

import type { DecisionInput, Policy } from 'a2a-ratelimit';
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

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const perCaller: Policy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  limit: 2,
  windowSeconds: 3600,
  burst: 2,
};
const ask = (caller: string): DecisionInput => ({ caller, method: 'SendMessage' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!redisUp)('attack: hand-written <prefix>policy-set', () => {
  let client: Redis;
  const prefix = runPrefix('attack-policy-set');
  let seq = 0;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    client = await connectRedis();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await deletePrefix(client, prefix);
    client.disconnect();
  });

  async function spentStore() {
    seq += 1;
    const keyPrefix = `${prefix}${seq}:`;
    const store = new RedisStore({
      client,
      policies: [perCaller],
      keyPrefix,
      onError: 'fail-closed',
      timeoutMs: 2_000,
      policyPollIntervalMs: 50,
      logger: false,
    });
    stores.push(store);
    for (let i = 0; i < 3; i++) await store.decide(ask('spent'));
    expect((await store.decide(ask('spent'))).admitted).toBe(false);
    await sleep(120); // the baseline generation is read
    return { store, key: `${keyPrefix}policy-set` /* docs/redis.md */ };
  }

  const garbage: readonly [string, string][] = [
    ['not JSON', '{{{'],
    ['null', 'null'],
    ['policies not an array', '{"policies":"x"}'],
    [
      'a policy of another kind under the same name',
      JSON.stringify({
        policies: [{ name: 'per-caller', kind: 'concurrency', scope: 'caller', max: 1000 }],
      }),
    ],
    [
      'a non-finite limit by marker',
      JSON.stringify({
        policies: [
          { ...perCaller, limit: { $number: 'Infinity' }, burst: { $number: 'Infinity' } },
        ],
      }),
    ],
    ['deep nesting', `{"policies":[${'['.repeat(20_000)}${']'.repeat(20_000)}]}`],
    ['__proto__ keys', '{"policies":[{"__proto__":{"kind":"rate"},"name":"per-caller"}]}'],
  ];

  it.each(garbage)(
    'garbage (%s) is refused: no crash, the spent caller stays spent',
    async (_label, data) => {
      const { store, key } = await spentStore();
      await client.hset(key, 'g', '1000', 'v', 'x', 'd', data);
      await sleep(200);
      expect((await store.decide(ask('spent'))).admitted).toBe(false);
      expect(store.policySet.policies.map((p) => p.name)).toEqual(['per-caller']);
    },
  );

  it('a well-formed set with no policies at all is not adopted silently (every limit opens)', async () => {
    const { store, key } = await spentStore();
    await client.hset(key, 'g', '1000', 'v', 'x', 'd', '{"policies":[]}');
    await sleep(200);
    expect((await store.decide(ask('spent'))).admitted).toBe(false);
  });
});
