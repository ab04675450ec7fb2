import { type Decision, type HoldOptions, MemoryStore, type Policy } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { ManualClock, STORE_CONTRACT } from 'a2a-ratelimit/testing';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDifferential } from './fixtures/redis/differential.js';
import {
  haveRedisBinaries,
  type RedisClusterFixture,
  requireOrSkip,
  runPrefix,
  startRedisCluster,
} from './fixtures/redis/redis-env.js';

const binaries = await haveRedisBinaries();
requireOrSkip(binaries, 'redis-server and redis-cli on PATH');

describe.skipIf(!binaries)('RedisStore on a 3-node Redis Cluster', () => {
  let cluster: RedisClusterFixture;
  let client: Cluster;
  const prefix = runPrefix('cluster');
  let seq = 0;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = await cluster.connect();
  }, 60_000);
  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  function clusterStore(
    policies: readonly Policy[],
    holds: HoldOptions | undefined,
    clock: ManualClock,
  ): RedisStore {
    seq += 1;
    return new RedisStore({
      client,
      policies,
      ...(holds ? { holds } : {}),
      clock,
      keyPrefix: `${prefix}${seq}:`,
      keyTtlPaddingMs: 600_000,
      onError: 'fail-closed',
      timeoutMs: 2_000,
      logger: false,
    });
  }

  it('is detected as a cluster and spreads keys over the three nodes', async () => {
    const clock = new ManualClock(1_760_000_000_000);
    const store = clusterStore(
      [{ name: 'per-caller', kind: 'rate', limit: 5, windowSeconds: 60 }],
      undefined,
      clock,
    );
    for (let i = 0; i < 60; i++) await store.decide({ caller: `c${i}`, method: 'GetTask' });
    const perNode = await Promise.all(client.nodes('master').map((n) => n.dbsize()));
    expect(perNode.filter((n) => n > 0).length).toBe(3);
    expect(store.stats().crossSlotDecisions).toBe(0);
  });

  describe('store contract (unchanged), cross-slot requests included', () => {
    for (const c of STORE_CONTRACT) {
      it(c.name, () =>
        c.run(async (policies, holds, clock) => clusterStore(policies, holds, clock)),
      );
    }
  });

  it('caller + tenant + agent policies (three slots): identical to MemoryStore, never CROSSSLOT', async () => {
    const policies: Policy[] = [
      {
        name: 'per-caller',
        kind: 'rate',
        scope: 'caller',
        methods: ['SendMessage', 'SendStreamingMessage', 'GetTask'],
        limit: 4,
        windowSeconds: 5,
        burst: 2,
      },
      { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 6, windowSeconds: 3, burst: 3 },
      { name: 'agent-rate', kind: 'rate', scope: 'agent', limit: 9, windowSeconds: 2, burst: 4 },
      {
        name: 'streams',
        kind: 'concurrency',
        scope: 'caller',
        methods: ['SendStreamingMessage'],
        max: 2,
        leaseTtlSeconds: 20,
      },
      // With a caller's share: its lease key lives in the caller's slot, the agent's in its own.
      {
        name: 'agent-overload',
        kind: 'overload',
        maxInFlight: 6,
        maxInFlightPerCaller: 2,
        leaseTtlSeconds: 4,
      },
    ];
    const stores: RedisStore[] = [];
    // Random sequences: more batches of 25 until claims and reservations were both exercised
    // (one batch sometimes has no claim), each batch compared decision by decision all the same.
    const seen = { claimed: 0, reserved: 0 };
    for (let batch = 0; batch < 8 && (seen.claimed === 0 || seen.reserved === 0); batch++) {
      const tally = await runDifferential(
        policies,
        { maxNoShows: 2, maxHoldsPerKey: 3 },
        (p, h, clock) => {
          const store = clusterStore(p, h, clock);
          stores.push(store);
          return store;
        },
        25,
      );
      seen.claimed += tally.claimed;
      seen.reserved += tally.reserved;
    }
    expect(seen.claimed).toBeGreaterThan(0);
    expect(seen.reserved).toBeGreaterThan(0);
    const crossSlot = stores.reduce((sum, s) => sum + s.stats().crossSlotDecisions, 0);
    const errors = stores.reduce((sum, s) => sum + s.stats().errors + s.stats().timeouts, 0);
    expect(crossSlot).toBeGreaterThan(100);
    expect(errors).toBe(0);
  });

  it('a cross-slot refund puts back a spent timestamp exactly: a later step back reads it as MemoryStore does', async () => {
    // The caller's slot rejects, the tenant's slot admitted tentatively and is refunded. The
    // tenant key held a timestamp 500 ms in the past (partly refilled): the refund must leave it
    // there, not delete it as "full", or a clock step back finds it in MemoryStore only (the
    // differential once saw remaining 3 on Redis vs 2 in memory this way).
    const policies: Policy[] = [
      { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 1, windowSeconds: 60, burst: 1 },
      { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 6, windowSeconds: 3, burst: 3 },
    ];
    const t0 = 1_760_000_000_000;
    const memClock = new ManualClock(t0);
    const redisClock = new ManualClock(t0);
    const memory = new MemoryStore({ policies, clock: memClock });
    const redis = clusterStore(policies, undefined, redisClock);
    const both = async (caller: string): Promise<Decision> => {
      const input = { caller, tenant: 'acme', method: 'SendMessage' as const };
      const m = await memory.decide(input);
      expect(await redis.decide(input), `${caller} at ${memClock.nowMs() - t0} ms`).toEqual(m);
      return m;
    };
    expect((await both('a')).admitted).toBe(true); // tenant timestamp: t0 + 500 ms
    memClock.advance(1_000);
    redisClock.advance(1_000);
    const refused = await both('a'); // caller spent: refused; the tenant slot charged, then refunded
    expect(refused.admitted).toBe(false);
    memClock.stepBack(1_000);
    redisClock.stepBack(1_000);
    const after = await both('b'); // the tenant timestamp lies 500 ms ahead again
    const tenant = after.admitted ? after.limits.find((l) => l.policy === 'per-tenant') : undefined;
    expect(tenant?.remaining).toBe(1);
    expect(redis.stats().crossSlotDecisions).toBe(3);
    await redis.close();
  });

  it("an overload policy's agent lease and caller-share lease come back in MemoryStore's order", async () => {
    // Both leases carry the overload policy's index but live in two slots; they were ordered by
    // that index, so their order followed the slots' and a renewal answered [true, false] where
    // MemoryStore answered [false, true] (the differential found it after a clock step back).
    // The caller's slot comes first (its rate policy), so its group of steps is tried first.
    const policies: Policy[] = [
      { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 4, windowSeconds: 5, burst: 2 },
      { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 6, windowSeconds: 3, burst: 3 },
      {
        name: 'agent-overload',
        kind: 'overload',
        maxInFlight: 6,
        maxInFlightPerCaller: 2,
        leaseTtlSeconds: 4,
      },
    ];
    const t0 = 1_760_000_000_000;
    const memClock = new ManualClock(t0);
    const redisClock = new ManualClock(t0);
    const memory = new MemoryStore({ policies, clock: memClock });
    const redis = clusterStore(policies, undefined, redisClock);
    const tick = (ms: number) => {
      memClock.advance(ms);
      redisClock.advance(ms);
    };
    const both = async (caller: string) => {
      const input = { caller, tenant: 't0', method: 'SendMessage' as const };
      const m = memory.decideSync(input);
      const r = await redis.decide(input);
      expect(r.admitted && m.admitted).toBe(true);
      return { m: m.admitted ? m.leases : [], r: r.admitted ? r.leases : [] };
    };
    for (let i = 0; i < 20; i++) {
      const caller = `c${i}`;
      const first = await both(caller);
      expect(first.r.length).toBe(2);
      // The agent's lease expires; another caller's decision sweeps it, the share's stays.
      tick(4_000);
      await both(`${caller}-other`);
      memClock.stepBack(90_000);
      redisClock.stepBack(90_000);
      expect(await redis.renew(first.r), caller).toEqual(memory.renewSync(first.m));
      tick(90_000);
    }
    await redis.close();
  });

  it('a cross-slot refund of a claimed hold puts the key back exactly: its timestamp and its no-show decay time', async () => {
    // The caller's slot claims a held slot tentatively, the tenant's refuses. A claim that leaves
    // the caller's key empty drops it; the refund rebuilt it at "now", where MemoryStore (which
    // never claimed) keeps the timestamp and the no-show decay time it had. The differential saw
    // the timestamp after a clock step back (remaining 0 on Redis, 1 in memory); the decay time
    // shows later, as a no-show forgiven in memory and not yet on Redis.
    const policies: Policy[] = [
      { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 2, windowSeconds: 3, burst: 1 },
      { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 1, windowSeconds: 3_600 },
    ];
    const t0 = 1_760_000_000_000;
    const memClock = new ManualClock(t0);
    const redisClock = new ManualClock(t0);
    const holds = { maxNoShows: 2 };
    const memory = new MemoryStore({ policies, holds, clock: memClock });
    const redis = clusterStore(policies, holds, redisClock);
    const at = (ms: number) => {
      for (const clock of [memClock, redisClock]) {
        if (t0 + ms >= clock.nowMs()) clock.set(t0 + ms);
        else clock.stepBack(clock.nowMs() - t0 - ms);
      }
    };
    const both = async (caller: string, tenant: string, messageId?: string) => {
      const input = {
        caller,
        tenant,
        method: 'SendMessage' as const,
        ...(messageId ? { messageId } : {}),
      };
      const m = memory.decideSync(input);
      expect(
        await redis.decide(input),
        `${JSON.stringify(input)} at ${memClock.nowMs() - t0} ms`,
      ).toEqual(m);
      return m;
    };
    const reserved = (d: Decision) => (d.admitted ? undefined : d.rejection.reserved);

    // The timestamp: the caller's key at 3,000 ms, claimed at 3,001 ms, read again at 3,000 ms.
    at(0);
    expect((await both('a', 'a1')).admitted).toBe(true);
    expect(reserved(await both('a', 'a2', 'm1'))).toBe(true); // slot at 1,500 ms
    at(3_001);
    expect((await both('a', 'a1', 'm1')).admitted).toBe(false); // claims, the tenant refuses
    at(3_000);
    expect((await both('a', 'a3')).admitted).toBe(true);

    // The decay time: a no-show counted at 4,600 ms, a hold claimed (and the key emptied) at 5,000.
    at(0);
    expect((await both('b', 'b1')).admitted).toBe(true);
    expect(reserved(await both('b', 'b2', 'm1'))).toBe(true); // slot 1,500 ms, expires 4,500
    expect(reserved(await both('b', 'b3', 'm2'))).toBe(true); // slot 3,000 ms, expires 6,000
    at(4_600);
    expect((await both('b', 'b1')).admitted).toBe(false); // m1's hold settled: a no-show
    at(5_000);
    expect((await both('b', 'b1', 'm2')).admitted).toBe(false); // claims m2's, the tenant refuses
    at(7_800); // m2's hold expired unclaimed (a second no-show); the first forgiven at 7,600
    expect((await both('b', 'b4', 'm3')).admitted).toBe(true);
    expect(reserved(await both('b', 'b5', 'm4'))).toBe(true); // one no-show left: still reserves
    await redis.close();
  });

  it('a cross-slot refund of a key read dirty leaves it as a rejection does: dropped when full and empty', async () => {
    // The caller's slot admits tentatively on a key whose no-show just decayed away, the tenant's
    // refuses. MemoryStore's rejection writes that key back, dropping it (full, nothing held); the
    // refund kept its past timestamp instead, which a clock step back then found ahead (the
    // differential: seed -385930595, admitted in memory, 4,501 ms on Redis).
    const policies: Policy[] = [
      { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 2, windowSeconds: 5, burst: 2 },
      { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 1, windowSeconds: 3_600 },
    ];
    const t0 = 1_760_000_000_000;
    const memClock = new ManualClock(t0);
    const redisClock = new ManualClock(t0);
    const memory = new MemoryStore({ policies, clock: memClock });
    const redis = clusterStore(policies, undefined, redisClock);
    const at = (ms: number) => {
      for (const clock of [memClock, redisClock]) {
        if (t0 + ms >= clock.nowMs()) clock.set(t0 + ms);
        else clock.stepBack(clock.nowMs() - t0 - ms);
      }
    };
    const both = async (tenant: string, messageId?: string) => {
      const input = {
        caller: 'a',
        tenant,
        method: 'SendMessage' as const,
        ...(messageId ? { messageId } : {}),
      };
      const m = memory.decideSync(input);
      expect(await redis.decide(input), `${tenant} at ${memClock.nowMs() - t0} ms`).toEqual(m);
      return m;
    };
    expect((await both('x1')).admitted).toBe(true);
    expect((await both('x2')).admitted).toBe(true);
    const held = await both('x3', 'm1'); // reserves a slot at 2,500 ms, claimable until 5,500
    expect(held.admitted ? undefined : held.rejection.reserved).toBe(true);
    at(6_000);
    expect((await both('x4')).admitted).toBe(true); // m1 a no-show
    at(20_000); // the no-show decayed; the timestamp (8,500 ms) long past
    expect((await both('x1')).admitted).toBe(false); // the tenant refuses
    at(5_000);
    expect((await both('x5')).admitted).toBe(true); // no key in either store: a full bucket
    await redis.close();
  });

  it("a cross-slot refund puts back a lease key's forgotten estimate: a later step back reads it as MemoryStore does", async () => {
    // The caller's slot admits tentatively on a key whose estimate is forgotten (so dropped), the
    // tenant's refuses: the refund must restore it, or after a clock step back, when the estimate
    // counts again, MemoryStore (which never dropped it) and Redis disagree on a full key's delay.
    const policies: Policy[] = [
      { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 1, windowSeconds: 3_600 },
      { name: 'tasks', kind: 'concurrency', scope: 'caller', max: 1, leaseTtlSeconds: 20 },
    ];
    const t0 = 1_760_000_000_000;
    const memClock = new ManualClock(t0);
    const redisClock = new ManualClock(t0);
    const memory = new MemoryStore({ policies, clock: memClock });
    const redis = clusterStore(policies, undefined, redisClock);
    const both = async (tenant: string) => {
      const input = { caller: 'a', tenant, method: 'SendMessage' as const };
      const m = memory.decideSync(input);
      const r = await redis.decide(input);
      const strip = (d: Decision) => (d.admitted ? { ...d, leases: d.leases.length } : d);
      expect(strip(r), `${tenant} at ${memClock.nowMs() - t0} ms`).toEqual(strip(m));
      return { m, r };
    };
    const move = (ms: number) => {
      for (const clock of [memClock, redisClock]) {
        if (ms >= 0) clock.advance(ms);
        else clock.stepBack(-ms);
      }
    };
    const first = await both('t1');
    move(5_000);
    if (first.m.admitted) memory.releaseSync(first.m.leases);
    if (first.r.admitted) await redis.release(first.r.leases); // held 5 s; it expired at 20 s
    move(25_000); // 30 s: the estimate is forgotten
    expect((await both('t1')).m.admitted).toBe(false); // the tenant refuses, the lease is refunded
    move(-20_000); // 10 s: the released lease's expiry lies ahead again, and with it the estimate
    expect((await both('t2')).m.admitted).toBe(true);
    const full = (await both('t3')).m;
    expect(full.admitted ? undefined : full.rejection.retryAfterMs).toBe(5_000);
    expect(redis.stats().crossSlotDecisions).toBe(4);
    await redis.close();
  });

  it('cross-slot requests in parallel: never over-admit, rejected requests charge nothing', async () => {
    const clock = new ManualClock(1_760_000_000_000);
    const store = clusterStore(
      [
        {
          name: 'per-caller',
          kind: 'rate',
          scope: 'caller',
          limit: 3,
          windowSeconds: 3600,
          burst: 3,
        },
        {
          name: 'per-tenant',
          kind: 'rate',
          scope: 'tenant',
          limit: 5,
          windowSeconds: 3600,
          burst: 5,
        },
        {
          name: 'agent',
          kind: 'rate',
          scope: 'agent',
          limit: 100,
          windowSeconds: 3600,
          burst: 100,
        },
      ],
      undefined,
      clock,
    );
    const requests = Array.from({ length: 40 }, (_, i) =>
      store.decide({
        caller: `c${i % 4}`,
        tenant: 'acme',
        method: 'SendMessage',
        messageId: `m${i}`,
      }),
    );
    const decisions = await Promise.all(requests);
    const admitted = decisions.filter((d) => d.admitted).length;
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThanOrEqual(5);
    // The agent bucket was charged by the admitted requests only (refunds gave the rest back):
    const probe = await store.decide({ caller: 'probe', tenant: 'other', method: 'SendMessage' });
    expect(probe.admitted).toBe(true);
    const agent = probe.admitted ? probe.limits.find((l) => l.policy === 'agent') : undefined;
    expect(agent?.remaining).toBe(100 - admitted - 1);
    expect(store.stats().errors).toBe(0);
  });
});
