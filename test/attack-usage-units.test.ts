import type { Policy } from 'a2a-ratelimit';
import { createLimiter, type Limiter } from 'a2a-ratelimit/server';
import { describe, expect, it } from 'vitest';
import { bothStores } from './fixtures/redis/both-stores.js';
import { probeRedis, REDIS_URL, requireOrSkip } from './fixtures/redis/redis-env.js';

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

const kinds = bothStores('attack-usage-units', redisUp, {
  onError: 'fail-open',
  policyPollIntervalMs: 500,
});
const stores = {
  memory: () => kinds.memory([TOKENS]),
  redis: () => kinds.redis([TOKENS]),
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
