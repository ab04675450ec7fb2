/**
 * Attack: `reportUsage` / `usageOf().report` with extreme (but accepted) unit counts, on both
 * stores. Whatever is charged, the next admission must be refused with a finite delay, and the
 * charge itself must not fail (a failed charge is usage nobody pays for).
 */

import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Policy } from '../src/core/policy.js';
import { RedisStore } from '../src/redis/redis-store.js';
import { createLimiter, type Limiter } from '../src/server/limiter.js';
import { MemoryStore } from '../src/store/memory-store.js';
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

const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage'],
  limit: 10_000,
  windowSeconds: 60,
};

let client: Redis;
const prefix = runPrefix('attack-usage-units');
let seq = 0;
beforeAll(async () => {
  if (redisUp) client = await connectRedis();
});
afterAll(async () => {
  if (!redisUp) return;
  await deletePrefix(client, prefix);
  client.disconnect();
});

const stores = {
  memory: () => new MemoryStore({ policies: [TOKENS] }),
  redis: () =>
    new RedisStore({
      client,
      policies: [TOKENS],
      keyPrefix: `${prefix}${++seq}:`,
      onError: 'fail-open',
      timeoutMs: 2_000,
      logger: false,
    }),
};

const request = { caller: 'alice', method: 'SendMessage' as const, binding: 'rest' as const };

describe.each(Object.keys(stores) as (keyof typeof stores)[])('attack: huge usage (%s)', (kind) => {
  it.each([1e9, 1e13, Number.MAX_SAFE_INTEGER])(
    '%d units: charged, then the caller is refused with a finite delay',
    async (units) => {
      const store = stores[kind]();
      const limiter: Limiter = createLimiter({
        store,
        domain: 'agents.example.com',
        eventLoopDelay: false,
        dedup: false,
      });
      const charged = await limiter.reportUsage(request, units).then(
        () => 'charged',
        (e: unknown) => String(e),
      );
      const after = await limiter.admit(request);
      await limiter.close();
      await store.close?.();
      expect(charged).toBe('charged');
      expect(after.status).toBe('rejected');
      if (after.status !== 'rejected') return;
      expect(Number.isFinite(after.rejection.retryAfterMs)).toBe(true);
      expect(after.rejection.retryAfterMs).toBeGreaterThan(0);
    },
  );
});
