import type { Decision, HoldOptions, Policy } from 'a2a-ratelimit';
import { MemoryStore } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { ManualClock, STORE_CONTRACT } from 'a2a-ratelimit/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDifferential } from './fixtures/redis/differential.js';
import {
  connectRedis,
  deletePrefix,
  haveRedisBinaries,
  probeRedis,
  REDIS_URL,
  requireOrSkip,
  runPrefix,
  startRedisServer,
} from './fixtures/redis/redis-env.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);
const binaries = await haveRedisBinaries();
requireOrSkip(binaries, 'redis-server and redis-cli on PATH');

/** Test time may run far ahead of real time: keep keys for the whole run. */
const TEST_PADDING_MS = 600_000;

describe.skipIf(!redisUp)('RedisStore against a real Redis', () => {
  let client: Redis;
  const prefix = runPrefix('store');
  let seq = 0;

  beforeAll(async () => {
    client = await connectRedis();
  });
  afterAll(async () => {
    await deletePrefix(client, prefix);
    client.disconnect();
  });

  function redisStore(
    policies: readonly Policy[],
    holds: HoldOptions | undefined,
    clock: ManualClock,
  ) {
    seq += 1;
    return new RedisStore({
      client,
      policies,
      ...(holds ? { holds } : {}),
      clock,
      keyPrefix: `${prefix}${seq}:`,
      keyTtlPaddingMs: TEST_PADDING_MS,
      onError: 'fail-closed',
      timeoutMs: 2_000,
      logger: false,
    });
  }

  describe('store contract (unchanged)', () => {
    for (const c of STORE_CONTRACT) {
      it(c.name, () => c.run(async (policies, holds, clock) => redisStore(policies, holds, clock)));
    }
  });

  // On a private redis-server: SCRIPT FLUSH empties a server's cache for every client, and the
  // shared one serves the test files running beside this one.
  it.runIf(binaries)('answers NOSCRIPT by sending the script, once', async () => {
    const server = await startRedisServer();
    const own = await connectRedis(server.url);
    try {
      const store = new RedisStore({
        client: own,
        policies: [{ name: 'r', kind: 'rate', limit: 5, windowSeconds: 1 }],
        clock: new ManualClock(1_760_000_000_000),
        keyPrefix: prefix,
        onError: 'fail-closed',
        timeoutMs: 2_000,
        logger: false,
      });
      // Warm first (a fresh server has no script yet: the store's first calls load it).
      expect((await store.decide({ caller: 'w', method: 'GetTask' })).admitted).toBe(true);
      const loadsBefore = store.stats().scriptLoads;
      await own.script('FLUSH');
      expect((await store.decide({ caller: 'a', method: 'GetTask' })).admitted).toBe(true);
      expect((await store.decide({ caller: 'a', method: 'GetTask' })).admitted).toBe(true);
      expect(store.stats().scriptLoads).toBe(loadsBefore + 1);
      await store.close();
    } finally {
      own.disconnect();
      await server.stop();
    }
  });

  it('every key it writes has a TTL; a full bucket without holds leaves no key', async () => {
    const clock = new ManualClock(1_760_000_000_000);
    const policies: Policy[] = [
      { name: 'per-caller', kind: 'rate', limit: 2, windowSeconds: 10, burst: 2 },
      { name: 'tasks', kind: 'concurrency', max: 5, leaseTtlSeconds: 30 },
    ];
    seq += 1;
    const keyPrefix = `${prefix}${seq}:`;
    const store = new RedisStore({
      client,
      policies,
      clock,
      keyPrefix,
      onError: 'fail-closed',
      timeoutMs: 2000,
      logger: false,
    });
    for (let i = 0; i < 3; i++)
      await store.decide({ caller: 'a', method: 'SendMessage', messageId: `m${i}` });
    await store.rememberMessage('a', 'm0', 60_000);
    const keys = await client.keys(`${keyPrefix}*`);
    expect(keys.length).toBeGreaterThanOrEqual(4); // rate key + holds hash + leases zset + hash + dedup
    for (const key of keys) {
      const ttl = await client.pttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(60_000 + 1000 + 60_000);
    }
    // No holds, no leases: after the bucket refills, a decision that finds it full deletes it.
    const plain = redisStore(
      [{ name: 'p', kind: 'rate', limit: 1, windowSeconds: 1 }],
      undefined,
      clock,
    );
    await plain.decide({ caller: 'z', method: 'GetTask' });
    clock.advance(5_000);
    const d = await plain.decide({ caller: 'z', method: 'GetTask' });
    expect(d.admitted).toBe(true);
  });

  it('a 16 kB caller name and messageId cost short keys and fields, decided as MemoryStore decides', async () => {
    const clock = new ManualClock(1_760_000_000_000);
    const policies: Policy[] = [
      { name: 'per-caller', kind: 'rate', limit: 1, windowSeconds: 60, burst: 1 },
      { name: 'tasks', kind: 'concurrency', max: 5, leaseTtlSeconds: 30 },
    ];
    seq += 1;
    const keyPrefix = `${prefix}${seq}:`;
    const store = new RedisStore({
      client,
      policies,
      clock,
      keyPrefix,
      onError: 'fail-closed',
      timeoutMs: 2000,
      logger: false,
    });
    const memory = new MemoryStore({ policies, clock });
    const caller = 'n'.repeat(16_000);
    const messageId = 'm'.repeat(16_000);
    for (const id of [messageId, `${messageId}2`]) {
      const input = { caller, method: 'SendMessage', messageId: id } as const;
      const r = await store.decide(input);
      const m = memory.decideSync(input);
      const strip = (d: Decision) => (d.admitted ? { ...d, leases: d.leases.length } : d);
      expect(strip(r)).toEqual(strip(m));
    }
    expect(await store.rememberMessage(caller, messageId, 60_000)).toEqual({ fresh: true });
    expect(await store.rememberMessage(caller, messageId, 60_000)).toEqual({ fresh: false });
    const keys = await client.keys(`${keyPrefix}*`);
    expect(keys.length).toBeGreaterThanOrEqual(3);
    for (const key of keys) {
      expect(key.length, key).toBeLessThan(200);
      if ((await client.type(key)) !== 'hash') continue;
      for (const field of await client.hkeys(key)) expect(field.length, field).toBeLessThan(200);
    }
  });

  it('Redis TIME mode (no clock): a burst then exact GCRA delays from the server clock', async () => {
    seq += 1;
    const store = new RedisStore({
      client,
      policies: [{ name: 'per-caller', kind: 'rate', limit: 10, windowSeconds: 100, burst: 3 }],
      keyPrefix: `${prefix}${seq}:`,
      onError: 'fail-closed',
      timeoutMs: 2000,
      logger: false,
    });
    const results: Decision[] = [];
    for (let i = 0; i < 5; i++)
      results.push(await store.decide({ caller: 'a', method: 'SendMessage', messageId: `t${i}` }));
    expect(results.map((r) => r.admitted)).toEqual([true, true, true, false, false]);
    const [r3, r4] = results.slice(3).map((r) => (r.admitted ? 0 : r.rejection.retryAfterMs));
    // T = 10 s: the 4th conforms ~10 s from the first, the 5th (reservations count) ~20 s.
    expect(r3).toBeGreaterThan(9_900);
    expect(r3).toBeLessThanOrEqual(10_000);
    expect(r4).toBeGreaterThan(19_900);
    expect(r4).toBeLessThanOrEqual(20_000);
  });

  it('decisions made in one event-loop turn are coalesced and decided exactly as one after the other', async () => {
    const policies: Policy[] = [
      {
        name: 'per-caller',
        kind: 'rate',
        scope: 'caller',
        limit: 60,
        windowSeconds: 60,
        burst: 10,
      },
      {
        name: 'per-tenant',
        kind: 'rate',
        scope: 'tenant',
        limit: 25,
        windowSeconds: 60,
        burst: 25,
      },
      { name: 'tasks', kind: 'concurrency', scope: 'caller', max: 7 },
    ];
    const memClock = new ManualClock(1_760_000_000_000);
    const redisClock = new ManualClock(1_760_000_000_000);
    const memory = new MemoryStore({ policies, clock: memClock });
    const redis = redisStore(policies, undefined, redisClock);
    const inputs = Array.from({ length: 60 }, (_, i) => ({
      caller: `c${i % 3}`,
      tenant: 't',
      method: 'SendMessage' as const,
      ...(i % 4 === 0 ? {} : { messageId: `m${i}` }),
    }));
    const expected = inputs.map((input) => memory.decideSync(input));
    const got = await Promise.all(inputs.map((input) => redis.decide(input)));
    const strip = (d: Decision) =>
      d.admitted ? { ...d, leases: d.leases.map((l) => l.policyIndex) } : d;
    expect(got.map(strip)).toEqual(expected.map(strip));
    expect(redis.stats().coalescedDecisions).toBeGreaterThanOrEqual(50);
    // And later, one at a time, they still agree (the coalesced writes left identical state).
    memClock.advance(3_000);
    redisClock.advance(3_000);
    for (const input of inputs.slice(0, 20)) {
      expect(strip(await redis.decide(input))).toEqual(strip(memory.decideSync(input)));
    }
  });

  describe('differential: MemoryStore and RedisStore make identical decisions', () => {
    const POLICY_SETS: {
      name: string;
      policies: Policy[];
      holds?: HoldOptions;
      /** The sequences must also exercise refusals by a caller's share. */
      shares?: boolean;
    }[] = [
      {
        name: 'one caller policy',
        policies: [{ name: 'per-caller', kind: 'rate', limit: 5, windowSeconds: 10, burst: 3 }],
      },
      {
        name: 'caller + method + tenant + concurrency',
        policies: [
          {
            name: 'per-caller',
            kind: 'rate',
            scope: 'caller',
            methods: ['SendMessage', 'SendStreamingMessage', 'GetTask'],
            limit: 4,
            windowSeconds: 5,
            burst: 2,
          },
          {
            name: 'per-caller-method',
            kind: 'rate',
            scope: 'caller+method',
            limit: 3,
            windowSeconds: 7,
            burst: 2,
          },
          {
            name: 'per-tenant',
            kind: 'rate',
            scope: 'tenant',
            limit: 7,
            windowSeconds: 3,
            burst: 4,
          },
          {
            name: 'streams',
            kind: 'concurrency',
            scope: 'caller',
            methods: ['SendStreamingMessage'],
            max: 2,
            leaseTtlSeconds: 20,
          },
        ],
        holds: { maxNoShows: 2, maxHoldsPerKey: 4, minGraceMs: 1_500, graceFraction: 0.25 },
      },
      {
        name: 'agent rate + overload + custom caller scope',
        policies: [
          {
            name: 'per-key',
            kind: 'rate',
            scope: { name: 'apikey', key: (r) => `k-${r.caller}`, callerScoped: true },
            limit: 2,
            windowSeconds: 3,
            burst: 1,
          },
          {
            name: 'agent-rate',
            kind: 'rate',
            scope: 'agent',
            limit: 10,
            windowSeconds: 2,
            burst: 5,
          },
          {
            name: 'agent-overload',
            kind: 'overload',
            maxInFlight: 3,
            maxEventLoopDelayMs: 100,
            leaseTtlSeconds: 15,
          },
        ],
        holds: { maxNoShows: 1, maxHoldsPerKey: 2 },
      },
      {
        // A caller's share of the in-flight cap: a second lease key in the caller's slot.
        name: 'overload with a caller share + caller rate + streams',
        policies: [
          { name: 'per-caller', kind: 'rate', limit: 2, windowSeconds: 5, burst: 2 },
          {
            name: 'streams',
            kind: 'concurrency',
            methods: ['SendStreamingMessage'],
            max: 2,
            leaseTtlSeconds: 4,
          },
          {
            name: 'agent-overload',
            kind: 'overload',
            maxInFlight: 7,
            maxInFlightPerCaller: 2,
            maxEventLoopDelayMs: 100,
            leaseTtlSeconds: 3,
          },
        ],
        shares: true,
      },
      {
        name: 'tiered caller policy + tiered tenant policy + concurrency',
        policies: [
          {
            name: 'per-caller',
            kind: 'rate',
            methods: ['SendMessage', 'SendStreamingMessage', 'GetTask'],
            tiers: {
              free: { limit: 3, windowSeconds: 6, burst: 2 },
              pro: { limit: 7, windowSeconds: 3, burst: 4 },
            },
            defaultTier: 'free',
          },
          {
            name: 'per-tenant',
            kind: 'rate',
            scope: 'tenant',
            tiers: {
              pro: { limit: 20, windowSeconds: 5 },
              free: { limit: 9, windowSeconds: 5, burst: 3 },
            },
            defaultTier: 'pro',
          },
          {
            name: 'tasks',
            kind: 'concurrency',
            methods: ['SendMessage'],
            max: 2,
            leaseTtlSeconds: 20,
          },
        ],
      },
      {
        name: 'token budget + estimate + caller rate',
        policies: [
          { name: 'per-caller', kind: 'rate', limit: 4, windowSeconds: 5, burst: 3 },
          {
            name: 'tokens',
            kind: 'rate',
            unit: 'tokens',
            methods: ['SendMessage', 'SendStreamingMessage'],
            limit: 3_000,
            windowSeconds: 7,
            burst: 2_000,
          },
          {
            name: 'tenant-tokens',
            kind: 'rate',
            unit: 'tokens',
            scope: 'tenant',
            limit: 5_000,
            windowSeconds: 3,
            estimate: 700,
          },
        ],
      },
    ];

    for (const set of POLICY_SETS) {
      it(`${set.name}: random arrivals, retries, no-shows, time steps (back too)`, async () => {
        // Random sequences: more batches until they have exercised holds, claims and plain
        // rejections (every batch is checked decision by decision all the same).
        const seen = { claimed: 0, reserved: 0, unreserved: 0, shared: 0, steppedBack: 0 };
        for (let batch = 0; batch < 8; batch++) {
          const more = await runDifferential(
            set.policies,
            set.holds,
            redisStore,
            Number(process.env.DIFF_RUNS ?? 40),
          );
          seen.claimed += more.claimed;
          seen.reserved += more.reserved;
          seen.unreserved += more.unreserved;
          seen.shared += more.shared;
          seen.steppedBack += more.steppedBack;
          if (
            seen.claimed > 0 &&
            seen.reserved > 0 &&
            seen.unreserved > 0 &&
            (seen.shared > 0 || set.shares !== true)
          ) {
            break;
          }
        }
        if (set.shares === true) expect(seen.shared).toBeGreaterThan(0);
        expect(seen.claimed).toBeGreaterThan(0);
        expect(seen.reserved).toBeGreaterThan(0);
        expect(seen.unreserved).toBeGreaterThan(0);
        expect(seen.steppedBack).toBeGreaterThan(0);
      });
    }
  });
});
