/**
 * A concurrency key's observed hold time (the estimate behind a full key's delay) on MemoryStore
 * and RedisStore, scripted: both keep it exactly while a lease is live or a released one's expiry
 * lies ahead, whatever MemoryStore's sweep or Redis's TTLs did meanwhile, and neither feeds it
 * from a lease that had already expired.
 */

import type { Decision, DecisionInput, Policy } from 'a2a-ratelimit';
import { MemoryStore } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { ManualClock } from 'a2a-ratelimit/testing';
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

/** Enough decisions for MemoryStore's background sweep to visit every lease key (it runs every 64). */
const SWEEP_DECISIONS = 70;

describe.skipIf(!redisUp)('the hold-time estimate of a concurrency key, on both stores', () => {
  let client: Redis;
  const prefix = runPrefix('lease-estimate');
  let seq = 0;
  beforeAll(async () => {
    client = await connectRedis();
  });
  afterAll(async () => {
    await deletePrefix(client, prefix);
    client.disconnect();
  });

  /** Both stores on their own identical clocks, and helpers that act on both and compare. */
  function both(policies: Policy[]) {
    const t0 = 1_760_000_000_000;
    const memClock = new ManualClock(t0);
    const redisClock = new ManualClock(t0);
    const memory = new MemoryStore({ policies, clock: memClock });
    const redis = new RedisStore({
      client,
      policies,
      clock: redisClock,
      keyPrefix: `${prefix}${++seq}:`,
      keyTtlPaddingMs: 600_000,
      onError: 'fail-closed',
      timeoutMs: 2_000,
      logger: false,
    });
    const strip = (d: Decision) => (d.admitted ? { ...d, leases: d.leases.length } : d);
    return {
      redis,
      tick(ms: number) {
        memClock.advance(ms);
        redisClock.advance(ms);
      },
      async decide(input: DecisionInput) {
        const m = memory.decideSync(input);
        const r = await redis.decide(input);
        expect(strip(r), JSON.stringify(input)).toEqual(strip(m));
        return { m, r };
      },
      async release(d: { m: Decision; r: Decision }) {
        if (d.m.admitted) memory.releaseSync(d.m.leases);
        if (d.r.admitted) await redis.release(d.r.leases);
      },
      /** Decisions no policy applies to: they move MemoryStore's sweep on, nothing else. */
      async sweep() {
        for (let i = 0; i < SWEEP_DECISIONS; i++) {
          await this.decide({ caller: `other${i}`, method: 'GetTask' });
        }
      },
    };
  }

  const send = { caller: 'a', method: 'SendMessage' } as const;
  const retryAfterMs = (d: Decision) => (d.admitted ? undefined : d.rejection.retryAfterMs);

  it("an empty key keeps its estimate until its released lease's expiry, swept or not; then neither store has it", async () => {
    const s = both([
      { name: 'tasks', kind: 'concurrency', methods: ['SendMessage'], max: 1, leaseTtlSeconds: 20 },
    ]);
    const first = await s.decide(send);
    s.tick(5_000);
    await s.release(first); // held 5 s: the estimate; the lease would have expired at 20 s
    await s.sweep(); // MemoryStore's sweep meets the empty key (it used to drop it, estimate too)
    expect((await s.decide(send)).m.admitted).toBe(true);
    // Full: the holder is expected to end one estimate (5 s) after it was admitted, now.
    expect(retryAfterMs((await s.decide(send)).m)).toBe(5_000);

    s.tick(21_000); // the lease admitted at 5 s expired unreleased at 25 s: no lease is live,
    await s.sweep(); // no released one's expiry lies ahead
    expect((await s.decide(send)).m.admitted).toBe(true);
    // A new lease on a key whose last expiry passed: the estimate is gone, the initial one (1 s)
    // applies, in both stores whether or not a sweep or a TTL removed the key.
    expect(retryAfterMs((await s.decide(send)).m)).toBe(1_000);
    await s.redis.close();
  });

  it('releasing a lease that already expired feeds no estimate, swept or not', async () => {
    const s = both([
      { name: 'tasks', kind: 'concurrency', methods: ['SendMessage'], max: 2, leaseTtlSeconds: 20 },
    ]);
    const early = await s.decide(send);
    s.tick(10_000);
    await s.decide(send); // live until 30 s
    s.tick(15_000); // `early` expired at 20 s, unreleased
    await s.sweep(); // MemoryStore's sweep drops it from the key; Redis keeps it until a decision
    await s.release(early); // late: a lease already given up, in both stores
    expect((await s.decide(send)).m.admitted).toBe(true);
    // Full: no hold time observed, so the initial estimate (1 s) for the newest lease.
    expect(retryAfterMs((await s.decide(send)).m)).toBe(1_000);
    await s.redis.close();
  });
});
