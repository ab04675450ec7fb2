/**
 * Tiers × units: a token budget whose size depends on the caller's tier (free 10,000 tokens/min,
 * pro 100,000), through `createLimiter` on a MemoryStore and on a real Redis with the same
 * numbers, and MemoryStore vs RedisStore decision by decision (the differential property test)
 * with weighted charges and debt on the tiered budget.
 */

import type { Store } from 'a2a-ratelimit';
import { compilePolicies, type HoldOptions, type Policy } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { type AdmissionOutcome, createLimiter } from 'a2a-ratelimit/server';
import { ManualClock } from 'a2a-ratelimit/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDifferential } from './fixtures/redis/differential.js';
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

const TIERED_TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage'],
  tiers: {
    free: { limit: 10_000, windowSeconds: 60 },
    pro: { limit: 100_000, windowSeconds: 60 },
  },
  defaultTier: 'free',
};

let client: Redis | undefined;
const prefix = runPrefix('tiered-usage');
let seq = 0;
beforeAll(async () => {
  if (redisUp) client = await connectRedis();
});
afterAll(async () => {
  if (client !== undefined) {
    await deletePrefix(client, prefix);
    client.disconnect();
  }
});

function redisStore(
  policies: readonly Policy[],
  holds: HoldOptions | undefined,
  clock: ManualClock,
): Store {
  return new RedisStore({
    client: client as Redis,
    policies,
    ...(holds === undefined ? {} : { holds }),
    clock,
    keyPrefix: `${prefix}:${++seq}:`,
    keyTtlPaddingMs: 600_000,
    onError: 'fail-closed',
    timeoutMs: 2_000,
    logger: false,
  });
}

const STORES: [string, typeof redisStore | undefined][] = [
  ['MemoryStore', undefined],
  ['RedisStore', redisStore],
];

describe.each(STORES)('a tiered token budget on %s', (name, makeStore) => {
  it.skipIf(name === 'RedisStore' && !redisUp)(
    'free and pro callers each get their own tier of the budget, with exact refill delays',
    async () => {
      const clock = new ManualClock(1_000_000);
      const policies = [TIERED_TOKENS];
      const limiter = createLimiter({
        ...(makeStore === undefined
          ? { policies }
          : { store: makeStore(policies, undefined, clock) }),
        clock,
        domain: 'agents.example.com',
        eventLoopDelay: false,
        tierOf: (request) => (request.caller.startsWith('pro-') ? 'pro' : undefined),
      });
      const free = { caller: 'alice', method: 'SendMessage' as const, binding: 'rest' as const };
      const pro = { caller: 'pro-bob', method: 'SendMessage' as const, binding: 'rest' as const };
      const admit = (r: typeof free): Promise<AdmissionOutcome> =>
        Promise.resolve(limiter.admit(r));

      const first = await admit(pro);
      expect(first.status).toBe('admitted');
      if (first.status === 'admitted') {
        expect(first.ticket.headers['ratelimit-policy']).toBe('"tokens";q=100000;qu="tokens";w=60');
        first.ticket.end();
      }
      // 12,000 tokens each: the free caller is 2,000 in debt, the pro caller has 88,000 left.
      await limiter.reportUsage(free, 12_000);
      await limiter.reportUsage(pro, 12_000, { settle: true }); // its admission reserved 100,000
      const freeRefused = await admit(free);
      expect(freeRefused.status).toBe('rejected');
      if (freeRefused.status === 'rejected') {
        // 2,000 of debt plus one token to spend, at 6 ms a token.
        expect(freeRefused.rejection).toMatchObject({
          policy: 'tokens',
          tier: 'free',
          retryAfterMs: 12_006,
          quota: { limit: 10_000, windowSeconds: 60 },
        });
      }
      const proAdmitted = await admit(pro);
      expect(proAdmitted.status).toBe('admitted');
      if (proAdmitted.status === 'admitted') {
        // 88,000 left, all of the pro tier's budget reserved by this admission: none left now.
        expect(proAdmitted.ticket.headers.ratelimit).toBe('"tokens";r=0;t=8');
        proAdmitted.ticket.end();
      }
      // 100,000 more: the pro caller is 12,000 in debt: 12,001 tokens at 0.6 ms = 7,200.6 ms.
      await limiter.reportUsage(pro, 100_000, { settle: true });
      const proRefused = await admit(pro);
      expect(proRefused.status).toBe('rejected');
      if (proRefused.status === 'rejected') {
        expect(proRefused.rejection).toMatchObject({
          policy: 'tokens',
          tier: 'pro',
          retryAfterMs: 7_201,
          quota: { limit: 100_000, windowSeconds: 60 },
        });
      }
      clock.advance(7_201);
      expect((await admit(pro)).status).toBe('admitted');
      expect((await admit(free)).status).toBe('rejected'); // 12,006 ms not yet gone
      clock.advance(12_006 - 7_201);
      expect((await admit(free)).status).toBe('admitted');
      await limiter.close();
    },
  );
});

describe('tiered usage policy validation', () => {
  it('names the policy and field', () => {
    expect(() => compilePolicies([{ ...TIERED_TOKENS, unit: 'Tokens' }])).toThrow(
      'Policy "tokens": unit must match',
    );
    expect(() => compilePolicies([{ ...TIERED_TOKENS, estimate: 10_001 }])).toThrow(
      'Policy "tokens": estimate must be at most every tier\'s burst (tiers.free: 10000), got 10001',
    );
    const { unit: _unit, ...requests } = TIERED_TOKENS;
    expect(() => compilePolicies([{ ...requests, estimate: 1 }])).toThrow(
      'Policy "tokens": estimate is for usage policies',
    );
  });

  it('every tier variant is a usage budget in the unit, charging the estimate', () => {
    const [p] = compilePolicies([{ ...TIERED_TOKENS, estimate: 500 }]).policies;
    if (p?.kind !== 'rate') throw new Error('not a rate policy');
    expect(
      p.tierVariants.map((v) => ({
        tier: v.tier,
        unit: v.unit,
        unitUs: v.unitUs,
        emissionUs: v.emissionUs,
        callerScoped: v.callerScoped,
      })),
    ).toEqual([
      { tier: 'free', unit: 'tokens', unitUs: 6_000, emissionUs: 3_000_000, callerScoped: false },
      { tier: 'pro', unit: 'tokens', unitUs: 600, emissionUs: 300_000, callerScoped: false },
    ]);
  });
});

describe.skipIf(!redisUp)('differential: a tiered token budget, MemoryStore vs RedisStore', () => {
  it('random arrivals, tier changes, weighted usage reports into debt, time steps', async () => {
    const policies: Policy[] = [
      { name: 'per-caller', kind: 'rate', limit: 4, windowSeconds: 5, burst: 3 },
      {
        name: 'tokens',
        kind: 'rate',
        unit: 'tokens',
        methods: ['SendMessage', 'SendStreamingMessage'],
        tiers: {
          free: { limit: 3_000, windowSeconds: 7, burst: 2_000 },
          pro: { limit: 9_000, windowSeconds: 4, burst: 6_000 },
        },
        defaultTier: 'free',
        estimate: 300,
      },
      {
        name: 'tenant-tokens',
        kind: 'rate',
        unit: 'tokens',
        scope: 'tenant',
        tiers: {
          pro: { limit: 20_000, windowSeconds: 3 },
          free: { limit: 5_000, windowSeconds: 3 },
        },
        defaultTier: 'pro',
      },
    ];
    // More batches until the budgets both admitted and refused (every batch is checked decision
    // by decision all the same).
    const seen = { admitted: 0, unreserved: 0 };
    for (let batch = 0; batch < 8; batch++) {
      const more = await runDifferential(
        policies,
        undefined,
        redisStore,
        Number(process.env.DIFF_RUNS ?? 40),
      );
      seen.admitted += more.admitted;
      seen.unreserved += more.unreserved;
      if (seen.admitted > 0 && seen.unreserved > 0) break;
    }
    expect(seen.admitted).toBeGreaterThan(0);
    expect(seen.unreserved).toBeGreaterThan(0);
  });
});
