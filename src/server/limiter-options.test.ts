import { describe, expect, it } from 'vitest';
import { WORKED_EXAMPLE_POLICY } from '../simulation/worked-example-policy.js';
import { MemoryStore } from '../store/memory-store.js';
import { createLimiter } from './limiter.js';
import { DEFAULT_LIMITER_OPTIONS, resolveLimiterOptions } from './limiter-options.js';

const policies = [WORKED_EXAMPLE_POLICY];

describe('limiter options', () => {
  it('refuses a store together with the options the store already fixes (policies, holds)', () => {
    const store = new MemoryStore({ policies });
    expect(() => createLimiter({ store, policies, domain: 'a.example' })).toThrow(TypeError);
    expect(() => createLimiter({ store, policies, domain: 'a.example' })).toThrow(
      /`policies` is ignored when a `store` is given/,
    );
    expect(() => createLimiter({ store, holds: { maxNoShows: 1 }, domain: 'a.example' })).toThrow(
      /`holds` is ignored when a `store` is given/,
    );
    expect(() => createLimiter({ domain: 'a.example' })).toThrow(/pass `policies`/);
  });

  it('defaults come from one frozen object; a bad number is a RangeError naming the option', () => {
    expect(Object.isFrozen(DEFAULT_LIMITER_OPTIONS)).toBe(true);
    expect(Object.isFrozen(DEFAULT_LIMITER_OPTIONS.dedup)).toBe(true);
    const resolved = resolveLimiterOptions({ policies });
    expect(resolved?.ttlMs).toBe(DEFAULT_LIMITER_OPTIONS.dedup.ttlSeconds * 1000);
    expect(resolved?.pendingTtlMs).toBe(DEFAULT_LIMITER_OPTIONS.dedup.pendingTtlSeconds * 1000);
    expect([...(resolved?.methods ?? [])]).toEqual(['SendMessage', 'SendStreamingMessage']);
    expect(resolveLimiterOptions({ policies, dedup: false })).toBeUndefined();
    for (const ttlSeconds of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => resolveLimiterOptions({ policies, dedup: { ttlSeconds } })).toThrow(
        /^createLimiter: dedup\.ttlSeconds must be a positive number/,
      );
    }
    expect(() => resolveLimiterOptions({ policies, dedup: { pendingTtlSeconds: 0 } })).toThrow(
      RangeError,
    );
    expect(() =>
      resolveLimiterOptions({ policies, dedup: { whenStoreUnavailable: 'maybe' as 'run' } }),
    ).toThrow(/'reject' or 'run'/);
    expect(() => resolveLimiterOptions({ policies, leases: { renewEveryMs: 0 } })).toThrow(
      /leases\.renewEveryMs must be a positive number/,
    );
    expect(() => new MemoryStore({ policies, maxKeys: 1.5 })).toThrow(
      'MemoryStore: maxKeys must be a positive integer, got 1.5',
    );
  });
});
