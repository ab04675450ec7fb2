import { describe, expect, it } from 'vitest';
import { compilePolicies } from '../core/compile-policies.js';
import { MemoryStore } from '../store/memory-store.js';
import { insurancePolicies } from './insurance-policies.js';

const set = compilePolicies(
  [
    { name: 'per-caller', kind: 'rate', limit: 200, windowSeconds: 1, burst: 50 },
    { name: 'tasks', kind: 'concurrency', max: 5 },
    { name: 'agent', kind: 'overload', maxInFlight: 9, maxEventLoopDelayMs: 150 },
    { name: 'lag-only', kind: 'overload', maxEventLoopDelayMs: 200 },
  ],
  { maxNoShows: 2, minGraceMs: 2_500 },
);

describe('insurancePolicies', () => {
  it('divides every limit by the replicas, rounding down, never below 1', () => {
    const { policies, holds } = insurancePolicies(set, 4);
    expect(policies).toMatchObject([
      { name: 'per-caller', limit: 50, burst: 12, windowSeconds: 1 },
      { name: 'tasks', max: 1 },
      { name: 'agent', maxInFlight: 2, maxEventLoopDelayMs: 150 },
      { name: 'lag-only', maxEventLoopDelayMs: 200 },
    ]);
    expect(holds).toEqual({
      maxNoShows: 2,
      maxHoldsPerKey: 1000,
      minGraceMs: 2500,
      graceFraction: 0.1,
    });
    // They compile and run.
    const store = new MemoryStore({ policies, holds });
    expect(store.decideSync({ caller: 'a', method: 'GetTask' }).admitted).toBe(true);
  });

  it("divides a caller's share given as a number; a default share follows maxInFlight", () => {
    const shared = compilePolicies([
      { name: 'given', kind: 'overload', maxInFlight: 400, maxInFlightPerCaller: 60 },
      { name: 'default', kind: 'overload', maxInFlight: 400 },
    ]);
    const { policies } = insurancePolicies(shared, 4);
    expect(policies).toMatchObject([
      { name: 'given', maxInFlight: 100, maxInFlightPerCaller: 15 },
      { name: 'default', maxInFlight: 100 },
    ]);
    const compiled = compilePolicies(policies);
    const shares = compiled.policies.map((p) => (p.kind === 'overload' ? p.callerShare?.max : 0));
    expect(shares).toEqual([15, 10]);
  });

  it('rejects a replica count that is not a positive integer', () => {
    expect(() => insurancePolicies(set, 0)).toThrow(RangeError);
    expect(() => insurancePolicies(set, 1.5)).toThrow(RangeError);
  });
});
