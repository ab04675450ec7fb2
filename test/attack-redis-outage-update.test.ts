/**
 * Attack (operator): `limiter.updatePolicies` while the Redis store cannot publish (an outage, a
 * timeout). The store swaps its set before it publishes; when the publication fails the call
 * rejects — and the limiter keeps its old view while the store already decides with the new
 * set. `serve --config` then prints that it kept the running set, though it did not.
 */

import type { Policy } from 'a2a-ratelimit';
import type { RedisLike } from 'a2a-ratelimit/redis';
import { RedisStore } from 'a2a-ratelimit/redis';
import { createLimiter } from 'a2a-ratelimit/server';
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

const perCaller = (limit: number): Policy => ({
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  limit,
  windowSeconds: 3600,
  burst: limit,
});

/** A client whose every command fails while `down` (what ioredis does without an offline queue). */
function flaky(client: Redis): RedisLike & { down: boolean } {
  const outage = () =>
    Promise.reject(new Error("Stream isn't writeable and enableOfflineQueue options is false"));
  const wrapper = {
    down: false,
    evalsha: (sha1: string, numKeys: number, ...rest: (string | number)[]) =>
      wrapper.down ? outage() : client.evalsha(sha1, numKeys, ...rest),
    eval: (script: string, numKeys: number, ...rest: (string | number)[]) =>
      wrapper.down ? outage() : client.eval(script, numKeys, ...rest),
  };
  return wrapper;
}

describe.skipIf(!redisUp)('attack: updatePolicies during a Redis outage', () => {
  let client: Redis;
  const prefix = runPrefix('attack-outage-update');
  beforeAll(async () => {
    client = await connectRedis();
  });
  afterAll(async () => {
    await deletePrefix(client, prefix);
    client.disconnect();
  });

  it('a rejected update leaves the store and the limiter on one set', async () => {
    const redis = flaky(client);
    const store = new RedisStore({
      client: redis,
      policies: [perCaller(2)],
      keyPrefix: prefix,
      onError: 'fail-closed',
      timeoutMs: 500,
      policyPollIntervalMs: 100,
      logger: false,
    });
    const limiter = createLimiter({
      store,
      domain: 'agents.example.com',
      eventLoopDelay: false,
      dedup: false,
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const versionBefore = limiter.policySetVersion;
    redis.down = true;
    const failed = await limiter.updatePolicies([perCaller(1000)]).then(
      () => 'applied',
      () => 'rejected',
    );
    redis.down = false;
    expect(failed).toBe('rejected');
    // One set in force: what the limiter reports (metrics, card) is what the store decides with.
    expect(store.stats().policySetVersion).toBe(limiter.policySetVersion);
    // And the documented promise of a failed update: nothing changed.
    expect(limiter.policySetVersion).toBe(versionBefore);
    expect(store.policySet.policies[0]?.source).toMatchObject({ limit: 2 });
    await limiter.close();
    await store.close();
  });
});
