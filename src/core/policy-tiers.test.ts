import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { rejectionDetails } from '../wire/rejection-details.js';
import { compilePolicies } from './compile-policies.js';
import type { Policy } from './policy.js';
import { PolicyError } from './policy-error.js';
import type { Decision } from './rejection.js';

const tiered: Policy = {
  name: 'per-caller',
  kind: 'rate',
  methods: ['SendMessage'],
  tiers: {
    free: { limit: 60, windowSeconds: 60, burst: 10 },
    pro: { limit: 600, windowSeconds: 60, burst: 100 },
  },
  defaultTier: 'free',
};
const plain: Policy = {
  name: 'per-tenant',
  kind: 'rate',
  scope: 'tenant',
  limit: 1000,
  windowSeconds: 60,
};

function errorOf(policies: Policy[]): PolicyError {
  try {
    compilePolicies(policies);
  } catch (e) {
    if (e instanceof PolicyError) return e;
    throw e;
  }
  throw new Error('compiled');
}

function flood(
  store: MemoryStore,
  caller: string,
  tier: string | undefined,
  n: number,
): Decision[] {
  const out: Decision[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      store.decideSync({
        caller,
        method: 'SendMessage',

        tenant: 't',
        ...(tier ? { tier } : {}),
      }),
    );
  }
  return out;
}

describe('tiered rate policies', () => {
  it('compile one variant per tier, the default tier standing for the policy', () => {
    const set = compilePolicies([tiered, plain]);
    const p = set.policies[0];
    if (p?.kind !== 'rate') throw new Error('rate');
    expect([p.tier, p.limit, p.burst, p.emissionUs, p.paramIndex]).toEqual([
      'free',
      60,
      10,
      1_000_000,
      0,
    ]);
    expect(
      p.tierVariants.map((v) => [v.tier, v.limit, v.burst, v.emissionUs, v.paramIndex]),
    ).toEqual([
      ['free', 60, 10, 1_000_000, 0],
      ['pro', 600, 100, 100_000, 2],
    ]);
    expect(set.rows.map((r) => r.paramIndex)).toEqual([0, 1, 2]);
    expect(set.tiered).toBe(true);
    expect(set.forMethod('SendMessage', 'pro').map((x) => x.kind === 'rate' && x.burst)).toEqual([
      100, 1000,
    ]);
    expect(set.forMethod('SendMessage', 'gold')).toBe(set.forMethod('SendMessage'));
    expect(set.atIndex(0, 'pro')).toBe(p.tierVariants[1]);
    expect(compilePolicies([plain]).tiered).toBe(false);
  });

  it('refuse bad tiers naming the policy and field', () => {
    const cases: [Policy, string][] = [
      [{ ...tiered, defaultTier: 'gold' }, 'defaultTier'],
      [{ ...tiered, defaultTier: undefined } as unknown as Policy, 'defaultTier'],
      [{ ...tiered, limit: 5 } as Policy, 'limit'],
      [{ ...tiered, tiers: {} }, 'tiers'],
      [
        { ...tiered, tiers: { Free: { limit: 1, windowSeconds: 1 } }, defaultTier: 'Free' },
        'tiers.Free',
      ],
      [{ ...tiered, tiers: { free: { limit: 0, windowSeconds: 60 } } }, 'tiers.free.limit'],
      [
        { ...tiered, tiers: { free: { limit: 1, windowSeconds: 1.5 } } },
        'tiers.free.windowSeconds',
      ],
      [
        { ...tiered, tiers: { free: { limit: 5, windowSeconds: 60, burst: 0 } } },
        'tiers.free.burst',
      ],
    ];
    for (const [policy, field] of cases) {
      const e = errorOf([policy]);
      expect([e.policy, e.field], JSON.stringify(policy)).toEqual(['per-caller', field]);
    }
  });

  it('give a free and a pro caller each its own burst and rate; no tier is the default tier', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ policies: [tiered], clock });
    const admitted = (ds: Decision[]) => ds.filter((d) => d.admitted).length;
    expect(admitted(flood(store, 'f', 'free', 30))).toBe(10);
    expect(admitted(flood(store, 'p', 'pro', 300))).toBe(100);
    expect(admitted(flood(store, 'n', undefined, 30))).toBe(10);
    expect(admitted(flood(store, 'u', 'unknown-tier', 30))).toBe(10);
    // Rate: one more per emission interval of the caller's own tier.
    clock.advance(100);
    expect(admitted(flood(store, 'p', 'pro', 5))).toBe(1);
    expect(admitted(flood(store, 'f', 'free', 5))).toBe(0);
    clock.advance(900);
    expect(admitted(flood(store, 'f', 'free', 5))).toBe(1);
  });

  it('name policy and tier in the rejection, ErrorInfo, QuotaFailure and RateLimit state', () => {
    const store = new MemoryStore({ policies: [tiered], clock: new ManualClock(0) });
    const last = flood(store, 'p', 'pro', 101)[100];
    if (last === undefined || last.admitted) throw new Error('rejected');
    expect(last.rejection).toMatchObject({
      policy: 'per-caller',
      tier: 'pro',
      retryAfterMs: 100,
      quota: { limit: 600, windowSeconds: 60 },
    });
    expect(last.rejection.message).toContain('tier pro: 600 requests per 60 s');
    expect(last.limits).toEqual([
      { policy: 'per-caller', limit: 600, windowSeconds: 60, remaining: 0, resetSeconds: 1 },
    ]);
    const [info, , quota] = rejectionDetails(last.rejection, 'agents.example.com');
    expect(info?.type === 'ErrorInfo' && info.message.metadata).toMatchObject({
      policy: 'per-caller',
      tier: 'pro',
    });
    expect(quota?.type === 'QuotaFailure' && quota.message.violations[0]?.quotaDimensions).toEqual({
      method: 'SendMessage',
      scope: 'caller',
      tier: 'pro',
    });
  });

  it('keep one bucket per caller across tiers: a tier change carries the time it is ahead', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ policies: [tiered], clock });
    expect(flood(store, 'a', 'free', 10).every((d) => d.admitted)).toBe(true);
    // Free's 10 put the bucket 10 s ahead; pro tolerates 9.9 s: 100 ms until it conforms.
    const [first] = flood(store, 'a', 'pro', 1);
    expect(first?.admitted === false && first.rejection.retryAfterMs).toBe(100);
    clock.advance(100);
    expect(flood(store, 'a', 'pro', 3).filter((d) => d.admitted).length).toBe(1);
  });
});
