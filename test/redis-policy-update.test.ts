import type { DecisionInput } from 'a2a-ratelimit';
import { compilePolicies, type Policy } from 'a2a-ratelimit';
import type { RedisStoreOptions } from 'a2a-ratelimit/redis';
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

const perCaller = (limit: number): Policy => ({
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  limit,
  windowSeconds: 60,
  burst: limit,
});
const tasks: Policy = { name: 'tasks', kind: 'concurrency', scope: 'caller', max: 10 };
const perAgent: Policy = {
  name: 'per-agent',
  kind: 'rate',
  scope: 'agent',
  limit: 1000,
  windowSeconds: 1,
  burst: 1000,
};

const ask = (caller: string): DecisionInput => ({ caller, method: 'SendMessage' });

async function admittedCount(store: RedisStore, caller: string, tries: number): Promise<number> {
  let admitted = 0;
  for (let i = 0; i < tries; i++) if ((await store.decide(ask(caller))).admitted) admitted++;
  return admitted;
}

/** Polls `condition` until true; returns the elapsed ms, or fails after `withinMs`. */
async function within(withinMs: number, condition: () => boolean): Promise<number> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > withinMs) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return performance.now() - start;
}

describe.skipIf(!redisUp)('RedisStore: live policy changes across replicas', () => {
  let client: Redis;
  const prefix = runPrefix('policy-update');
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

  /** Two (or more) replicas on one fresh prefix. */
  function replicas(
    policies: readonly Policy[],
    count = 2,
    policyPollIntervalMs: number | undefined = 100,
  ) {
    seq += 1;
    const keyPrefix = `${prefix}${seq}:`;
    const made = Array.from(
      { length: count },
      () =>
        new RedisStore({
          client,
          policies,
          keyPrefix,
          onError: 'fail-closed',
          timeoutMs: 2_000,
          ...(policyPollIntervalMs === undefined ? {} : { policyPollIntervalMs }),
          logger: false,
        }),
    );
    stores.push(...made);
    return made as [RedisStore, RedisStore, ...RedisStore[]];
  }

  it('the other replica decides with the new limits within 1 s; a spent caller stays spent; reordering keeps state', async () => {
    const [a, b] = replicas([perCaller(5)], 2, undefined); // the default poll interval
    expect(await admittedCount(a, 'spent', 8)).toBe(5);
    const adopted: ReturnType<typeof compilePolicies>[] = [];
    a.onPoliciesChanged((set) => adopted.push(set));

    // Reordered (a new policy first) and tighter: per-caller is now row 1, limit 3.
    const next = compilePolicies([tasks, perCaller(3)]);
    await b.updatePolicies(next);
    expect(b.policySet).toBe(next);
    const tookMs = await within(1_000, () => adopted.length === 1);
    expect(tookMs).toBeLessThan(1_000);
    expect(a.stats().policySetVersion).toBe(b.stats().policySetVersion);
    expect(a.stats().policyGeneration).toBe(b.stats().policyGeneration);
    expect(a.policySet.policies.map((p) => p.name)).toEqual(['tasks', 'per-caller']);

    // New limits on A: a fresh caller gets 3, not 5.
    expect(await admittedCount(a, 'fresh', 6)).toBe(3);
    // State kept by name across the reorder: the spent caller is still spent on both replicas.
    expect((await a.decide(ask('spent'))).admitted).toBe(false);
    expect((await b.decide(ask('spent'))).admitted).toBe(false);
    // Leases of the new policy are renewed under its row on both replicas.
    const admitted = await a.decide(ask('leaser'));
    expect(admitted.admitted).toBe(true);
    if (!admitted.admitted) return;
    expect(admitted.leases).toHaveLength(1);
    expect(await b.renew(admitted.leases)).toEqual([true]);
    await b.release(admitted.leases);
  });

  it('a removed policy stops applying; a policy keeps its state through a set without it only while its keys live', async () => {
    const [a, b] = replicas([perCaller(2), perAgent]);
    expect(await admittedCount(a, 'spent', 3)).toBe(2);
    await a.updatePolicies(compilePolicies([perAgent]));
    await within(1_000, () => b.policySet.policies.length === 1);
    // per-caller no longer applies: the spent caller is admitted on both.
    expect(await admittedCount(b, 'spent', 3)).toBe(3);
    expect(await admittedCount(a, 'spent', 3)).toBe(3);
    // Its old leases are reported gone.
    expect(
      await a.renew([
        { policyIndex: 0, key: `${prefix}${seq}:k{c:x}per-caller\u0000x`, leaseId: 'rgone.1' },
      ]),
    ).toEqual([false]);
  });

  it('the spent state survives when a policy is put back within its window (no fresh bucket on reload)', async () => {
    const [a, b] = replicas([perCaller(2)]);
    expect(await admittedCount(a, 'spent', 3)).toBe(2);
    await a.updatePolicies(compilePolicies([perCaller(2), perAgent]));
    await b.updatePolicies(compilePolicies([perAgent, perCaller(2)]));
    await within(1_000, () => a.policySet.policies[0]?.name === 'per-agent');
    expect((await a.decide(ask('spent'))).admitted).toBe(false);
    expect((await b.decide(ask('spent'))).admitted).toBe(false);
  });

  it('a store started later uses its own set, and adopts the next published one', async () => {
    const [a] = replicas([perCaller(5)], 1);
    await a.updatePolicies(compilePolicies([perCaller(1)]));
    seq -= 1; // same prefix
    const [late] = replicas([perCaller(4)], 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(late.policySet.policies[0]?.kind === 'rate' && late.policySet.policies[0].limit).toBe(4);
    await a.updatePolicies(compilePolicies([perCaller(2)]));
    await within(1_000, () => {
      const p = late.policySet.policies[0];
      return p?.kind === 'rate' && p.limit === 2;
    });
  });

  it('functions are re-attached by policy name; a replica without them refuses the set and keeps its own', async () => {
    const exempt = (r: { readonly caller: string }) => r.caller === 'health';
    const withPredicate: Policy = { ...perCaller(1), exempt };
    const warnings: string[] = [];
    const logger: RedisStoreOptions['logger'] = { warn: (m) => warnings.push(m), info: () => {} };
    seq += 1;
    const keyPrefix = `${prefix}${seq}:`;
    const make = (policies: readonly Policy[]) => {
      const store = new RedisStore({
        client,
        policies,
        keyPrefix,
        onError: 'fail-closed',
        timeoutMs: 2_000,
        policyPollIntervalMs: 100,
        logger,
      });
      stores.push(store);
      return store;
    };
    const a = make([withPredicate]);
    const b = make([withPredicate]);
    const c = make([perCaller(1)]); // no predicate of its own
    await a.updatePolicies(compilePolicies([{ ...perCaller(2), exempt }]));
    await within(1_000, () => {
      const p = b.policySet.policies[0];
      return p?.kind === 'rate' && p.limit === 2;
    });
    expect(await admittedCount(b, 'health', 5)).toBe(5); // b's own predicate, re-attached
    await within(1_000, () => warnings.some((w) => w.includes('refused')));
    const p = c.policySet.policies[0];
    expect(p?.kind === 'rate' && p.limit).toBe(1);
  });

  it('refuses a set that changes a policy kind under one name; a closed store stops following', async () => {
    const [a, b] = replicas([perCaller(5)]);
    await expect(
      a.updatePolicies(compilePolicies([{ name: 'per-caller', kind: 'concurrency', max: 1 }])),
    ).rejects.toThrow(/changes kind/);
    expect(a.policySet.policies[0]?.kind).toBe('rate');
    await b.close();
    const before = b.policySet;
    await a.updatePolicies(compilePolicies([perCaller(3)]));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(b.policySet).toBe(before);
  });

  it('two replicas updating at once converge on the later generation', async () => {
    const [a, b, c] = replicas([perCaller(5)], 3) as [RedisStore, RedisStore, RedisStore];
    await Promise.all([
      a.updatePolicies(compilePolicies([perCaller(2)])),
      b.updatePolicies(compilePolicies([perCaller(3)])),
    ]);
    await within(1_000, () => {
      const versions = new Set([a, b, c].map((s) => s.stats().policySetVersion));
      return versions.size === 1 && c.stats().policyGeneration === 2;
    });
    const p = c.policySet.policies[0];
    const winner = a.stats().policySetVersion;
    expect(p?.kind === 'rate' && [2, 3].includes(p.limit)).toBe(true);
    expect(b.stats().policySetVersion).toBe(winner);
  });
});
