/**
 * Exemptions on a MemoryStore and on a real Redis: callers named in a policy's `exempt` list, or
 * requests its predicate accepts, are not limited by that policy (its state is never touched) and
 * are still limited by the others; everyone else is limited as before.
 */

import type { Decision, Store } from 'a2a-ratelimit';
import { compilePolicies, MemoryStore, type Policy, PolicyError } from 'a2a-ratelimit';
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

const POLICIES: Policy[] = [
  { name: 'per-caller', kind: 'rate', limit: 2, windowSeconds: 60, exempt: ['health-checker'] },
  {
    name: 'per-tenant',
    kind: 'rate',
    scope: 'tenant',
    limit: 3,
    windowSeconds: 60,
    exempt: (r) => r.tenant === 'internal',
  },
];

let client: Redis | undefined;
const prefix = runPrefix('exempt');
beforeAll(async () => {
  if (redisUp) client = await connectRedis();
});
afterAll(async () => {
  if (client !== undefined) {
    await deletePrefix(client, prefix);
    client.disconnect();
  }
});

const STORES: [string, (clock: ManualClock) => Store][] = [
  ['MemoryStore', (clock) => new MemoryStore({ policies: POLICIES, clock })],
  [
    'RedisStore',
    (clock) =>
      new RedisStore({
        client: client as Redis,
        policies: POLICIES,
        clock,
        keyPrefix: `${prefix}:`,
        keyTtlPaddingMs: 600_000,
        onError: 'fail-closed',
        timeoutMs: 2_000,
      }),
  ],
];

describe.each(STORES)('exemptions on %s', (name, makeStore) => {
  it.skipIf(name === 'RedisStore' && !redisUp)(
    'exempt callers and requests skip that policy only',
    async () => {
      const store = makeStore(new ManualClock(1_000_000));
      const flood = async (caller: string, tenant: string, n: number) => {
        const out: Decision[] = [];
        for (let i = 0; i < n; i++)
          out.push(await store.decide({ caller, tenant, method: 'GetTask' }));
        return out;
      };
      const policiesRefusing = (ds: Decision[]) =>
        ds.map((d) => (d.admitted ? 'ok' : d.rejection.policy));
      // The health checker skips per-caller, and is limited by its tenant's 3.
      expect(policiesRefusing(await flood('health-checker', 'a', 4))).toEqual([
        'ok',
        'ok',
        'ok',
        'per-tenant',
      ]);
      // Anyone else in tenant a: the tenant is spent.
      expect(policiesRefusing(await flood('bob', 'a', 1))).toEqual(['per-tenant']);
      // Tenant internal skips per-tenant; bob still has his own 2 per minute.
      expect(policiesRefusing(await flood('carol', 'internal', 3))).toEqual([
        'ok',
        'ok',
        'per-caller',
      ]);
      // The exempt policy's limits are not in an exempt request's RateLimit state.
      const [d] = await flood('dave', 'internal', 1);
      expect(d?.limits.map((l) => l.policy)).toEqual(['per-caller']);
      await store.close();
    },
  );
});

describe('exempt validation', () => {
  it('names the policy and field', () => {
    expect(() =>
      compilePolicies([{ name: 'x', kind: 'rate', limit: 1, windowSeconds: 1, exempt: [''] }]),
    ).toThrow(PolicyError);
    expect(() =>
      compilePolicies([{ name: 'x', kind: 'concurrency', max: 1, exempt: 'bob' as never }]),
    ).toThrow('Policy "x": exempt must be a list of caller names or a function');
  });
});
