import { describe, expect, it } from 'vitest';
import { ManualClock } from '../testing/manual-clock.js';
import { STORE_CONTRACT } from '../testing/store-contract.js';
import { MemoryStore } from './memory-store.js';

describe('MemoryStore: store contract', () => {
  for (const c of STORE_CONTRACT) {
    it(c.name, () =>
      c.run(
        async (policies, holds, clock) =>
          new MemoryStore({ policies, clock, ...(holds ? { holds } : {}) }),
      ),
    );
  }
});

describe('MemoryStore: bounded memory', () => {
  it('1,000,000 distinct callers with maxKeys 100,000 stay bounded; no limited caller gets a fresh bucket', () => {
    const clock = new ManualClock(1_760_000_000_000);
    const store = new MemoryStore({
      clock,
      maxKeys: 100_000,
      policies: [{ name: 'per-caller', kind: 'rate', limit: 1, windowSeconds: 3600, burst: 1 }],
    });
    // Every caller spends its only token: for an hour none of them may be admitted again.
    const limited: string[] = [];
    let peakKeys = 0;
    for (let i = 0; i < 1_000_000; i++) {
      const caller = `c${i}`;
      store.decideSync({ caller, method: 'GetTask' });
      if (i % 1000 === 0) limited.push(caller);
      if (i % 10_000 === 0) peakKeys = Math.max(peakKeys, store.stats().rateKeys);
      clock.advance(1);
    }
    const stats = store.stats();
    expect(Math.max(peakKeys, stats.rateKeys)).toBeLessThanOrEqual(100_000);
    expect(stats.overflowDecisions).toBeGreaterThan(0);
    // Callers that were tracked (or shared the overflow bucket) are still limited: nobody got a
    // fresh bucket because the table was full.
    for (const caller of limited) {
      expect(store.decideSync({ caller, method: 'GetTask' }).admitted).toBe(false);
    }
  });

  it('drops keys whose bucket refilled, with no timer per key', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({
      clock,
      policies: [{ name: 'r', kind: 'rate', limit: 10, windowSeconds: 1, burst: 1 }],
    });
    for (let i = 0; i < 5000; i++) store.decideSync({ caller: `c${i}`, method: 'GetTask' });
    expect(store.stats().rateKeys).toBe(5000);
    clock.advance(1000); // every bucket is full again
    for (let i = 0; i < 20_000; i++) store.decideSync({ caller: 'hot', method: 'GetTask' });
    expect(store.stats().rateKeys).toBeLessThanOrEqual(1);
  });

  it('idle keys make room before the overflow bucket is used', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({
      clock,
      maxKeys: 100,
      policies: [{ name: 'r', kind: 'rate', limit: 1, windowSeconds: 1, burst: 1 }],
    });
    for (let i = 0; i < 100; i++) store.decideSync({ caller: `old${i}`, method: 'GetTask' });
    clock.advance(2000);
    for (let i = 0; i < 100; i++) {
      expect(store.decideSync({ caller: `new${i}`, method: 'GetTask' }).admitted).toBe(true);
    }
    expect(store.stats().overflowDecisions).toBe(0);
  });

  it('rejects a bad maxKeys', () => {
    expect(() => new MemoryStore({ policies: [], maxKeys: 0 })).toThrow(/maxKeys/);
  });
});
