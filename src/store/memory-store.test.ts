import fc from 'fast-check';
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
    expect(stats.rateKeysEvicted).toBeGreaterThan(0);
    // Callers that were tracked (or evicted into an overflow bucket) are still limited: nobody
    // got a fresh bucket because the table was full.
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

  it('a sweep that backed off over live keys speeds up again once keys can be dropped', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({
      clock,
      policies: [{ name: 'r', kind: 'rate', limit: 1, windowSeconds: 3600, burst: 2 }],
    });
    // 5,000 live keys visited 20 times each: nothing to drop, so background steps back off.
    for (let i = 0; i < 100_000; i++)
      store.decideSync({ caller: `c${i % 5000}`, method: 'GetTask' });
    expect(store.stats().rateKeys).toBe(5000);
    clock.advance(2 * 3600 * 1000); // every bucket is full again
    let decisions = 0;
    while (store.stats().rateKeys > 1 && decisions < 100_000) {
      store.decideSync({ caller: 'hot', method: 'GetTask' });
      decisions++;
    }
    // One backed-off wait (at most 1,024 decisions), then a step of 64 keys every 64 decisions.
    expect(decisions).toBeLessThan(1024 + 5000 + 128);
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
    expect(store.stats().rateKeysEvicted).toBe(0);
  });

  it('rejects a bad maxKeys or overflowBuckets', () => {
    expect(() => new MemoryStore({ policies: [], maxKeys: 0 })).toThrow(/maxKeys/);
    expect(() => new MemoryStore({ policies: [], overflowBuckets: 0 })).toThrow(/overflowBuckets/);
    expect(() => new MemoryStore({ policies: [], overflowBuckets: 1.5 })).toThrow(
      /overflowBuckets/,
    );
  });
});

describe('MemoryStore: floods of new callers', () => {
  const FLOOD = 200_000;
  const NEWCOMERS = 1000;

  /**
   * 200,000 distinct one-request callers against the default maxKeys (100,000), a caller limited
   * before the flood, then 1,000 brand-new callers each sending their burst.
   */
  function flood(policy: { limit: number; windowSeconds: number; burst: number }) {
    const clock = new ManualClock(1_760_000_000_000);
    const store = new MemoryStore({
      clock,
      policies: [{ name: 'per-caller', kind: 'rate', scope: 'caller', ...policy }],
    });
    for (let i = 0; i <= policy.burst; i++)
      store.decideSync({ caller: 'heavy', method: 'GetTask' });
    expect(store.decideSync({ caller: 'heavy', method: 'GetTask' }).admitted).toBe(false);
    let peakKeys = 0;
    for (let i = 0; i < FLOOD; i++) {
      store.decideSync({ caller: `flood-${i}`, method: 'GetTask' });
      if (i % 1000 === 999) {
        clock.advance(1); // 200 ms over the whole flood
        peakKeys = Math.max(peakKeys, store.stats().rateKeys);
      }
    }
    let admitted = 0;
    let fullBurst = 0;
    for (let i = 0; i < NEWCOMERS; i++) {
      let got = 0;
      for (let j = 0; j < policy.burst; j++) {
        if (store.decideSync({ caller: `new-${i}`, method: 'GetTask' }).admitted) got++;
      }
      if (got > 0) admitted++;
      if (got === policy.burst) fullBurst++;
    }
    return {
      store,
      peakKeys,
      admitted: admitted / NEWCOMERS,
      fullBurst: fullBurst / NEWCOMERS,
      heavyAdmitted: store.decideSync({ caller: 'heavy', method: 'GetTask' }).admitted,
    };
  }

  it('60/min, burst 10 (the worked example): every new caller is admitted; the limited one is not', () => {
    const r = flood({ limit: 60, windowSeconds: 60, burst: 10 });
    expect(r.peakKeys).toBeLessThanOrEqual(100_000);
    expect(r.admitted).toBe(1);
    expect(r.heavyAdmitted).toBe(false);
  });

  it('10/hour, burst 10: every new caller is admitted (most with their whole burst); the limited one is not', () => {
    const r = flood({ limit: 10, windowSeconds: 3600, burst: 10 });
    expect(r.peakKeys).toBeLessThanOrEqual(100_000);
    expect(r.store.stats().rateKeysEvicted).toBeGreaterThan(90_000);
    // A flood caller spent one token: a new caller sharing its bucket starts with burst − 1.
    expect(r.admitted).toBe(1);
    expect(r.fullBurst).toBeGreaterThan(0.55);
    expect(r.heavyAdmitted).toBe(false);
  });

  it('1/hour, burst 1 (every flood caller limited for an hour): a new caller is refused only when its bucket holds one', () => {
    const r = flood({ limit: 1, windowSeconds: 3600, burst: 1 });
    expect(r.peakKeys).toBeLessThanOrEqual(100_000);
    // 100,000 limited timestamps in 262,144 buckets: about e^(−100000/262144) ≈ 68% stay clean.
    expect(r.admitted).toBeGreaterThan(0.55);
    expect(r.heavyAdmitted).toBe(false);
  });

  it('an evicted limited caller comes back limited (a one-key table)', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({
      clock,
      maxKeys: 1,
      policies: [{ name: 'r', kind: 'rate', limit: 1, windowSeconds: 3600, burst: 1 }],
    });
    expect(store.decideSync({ caller: 'a', method: 'GetTask' }).admitted).toBe(true);
    store.decideSync({ caller: 'b', method: 'GetTask' }); // evicts a (admitted unless it shares a's bucket)
    expect(store.stats()).toMatchObject({ rateKeys: 1, rateKeysEvicted: 1 });
    const again = store.decideSync({ caller: 'a', method: 'GetTask' }); // evicts b, a starts from its bucket
    expect(again.admitted).toBe(false);
    if (!again.admitted) expect(again.rejection.retryAfterMs).toBe(3_600_000);
    clock.advance(3_600_000);
    expect(store.decideSync({ caller: 'a', method: 'GetTask' }).admitted).toBe(true);
  });

  it('when every sampled key has holds, a new key is decided on its shared bucket', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({
      clock,
      maxKeys: 4,
      policies: [
        { name: 'r', kind: 'rate', scope: 'caller', limit: 1, windowSeconds: 60, burst: 1 },
      ],
    });
    for (let i = 0; i < 4; i++) {
      store.decideSync({ caller: `h${i}`, method: 'SendMessage', messageId: 'm1' });
      const held = store.decideSync({ caller: `h${i}`, method: 'SendMessage', messageId: 'm2' });
      expect(held.admitted === false && held.rejection.reserved).toBe(true);
    }
    expect(store.stats().holds).toBe(4);
    expect(store.decideSync({ caller: 'n', method: 'GetTask' }).admitted).toBe(true);
    expect(store.decideSync({ caller: 'n', method: 'GetTask' }).admitted).toBe(false);
    expect(store.stats()).toMatchObject({ rateKeys: 4, holds: 4, overflowDecisions: 2 });
  });

  it('no caller is ever admitted beyond its GCRA envelope, whatever the evictions (property)', () => {
    const op = fc.oneof(
      { weight: 5, arbitrary: fc.record({ caller: fc.integer({ min: 0, max: 7 }) }) },
      { weight: 2, arbitrary: fc.record({ advanceMs: fc.integer({ min: 0, max: 5000 }) }) },
    );
    fc.assert(
      fc.property(
        fc.record({
          limit: fc.integer({ min: 1, max: 5 }),
          windowSeconds: fc.constantFrom(1, 10, 60),
          burst: fc.integer({ min: 1, max: 4 }),
          maxKeys: fc.integer({ min: 1, max: 4 }),
          overflowBuckets: fc.integer({ min: 1, max: 4 }),
        }),
        fc.array(op, { minLength: 20, maxLength: 300 }),
        (p, ops) => {
          const clock = new ManualClock(0);
          const store = new MemoryStore({
            clock,
            maxKeys: p.maxKeys,
            overflowBuckets: p.overflowBuckets,
            policies: [
              {
                name: 'r',
                kind: 'rate',
                limit: p.limit,
                windowSeconds: p.windowSeconds,
                burst: p.burst,
              },
            ],
          });
          const emissionUs = Math.ceil((p.windowSeconds * 1e6) / p.limit);
          const toleranceUs = (p.burst - 1) * emissionUs;
          const admittedAtUs = new Map<number, number[]>();
          for (const o of ops) {
            if ('advanceMs' in o) {
              clock.advance(o.advanceMs);
              continue;
            }
            if (!store.decideSync({ caller: `c${o.caller}`, method: 'GetTask' }).admitted) continue;
            const times = admittedAtUs.get(o.caller) ?? [];
            times.push(clock.nowMs() * 1000);
            admittedAtUs.set(o.caller, times);
          }
          // GCRA: the j-th admission after the i-th is at least (j − i)·T − τ later.
          for (const times of admittedAtUs.values()) {
            for (let i = 0; i < times.length; i++) {
              for (let j = i + 1; j < times.length; j++) {
                expect((times[j] as number) - (times[i] as number)).toBeGreaterThanOrEqual(
                  (j - i) * emissionUs - toleranceUs,
                );
              }
            }
          }
          expect(store.stats().rateKeys).toBeLessThanOrEqual(p.maxKeys);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('MemoryStore: long caller names', () => {
  it('a 16 kB name is kept as its hash: one bucket per name, distinct names apart', () => {
    const store = new MemoryStore({
      policies: [{ name: 'r', kind: 'rate', limit: 1, windowSeconds: 3600, burst: 1 }],
    });
    const long = 'x'.repeat(16_000);
    expect(store.decideSync({ caller: long, method: 'GetTask' }).admitted).toBe(true);
    const again = store.decideSync({ caller: long, method: 'GetTask' });
    expect(again.admitted).toBe(false);
    if (!again.admitted) expect(again.rejection.subject).toMatch(/^caller:#sha256:[\w-]{43}$/);
    expect(store.decideSync({ caller: `${long}y`, method: 'GetTask' }).admitted).toBe(true);
    // A short name that looks like a hash is not one.
    if (!again.admitted) {
      const lookalike = again.rejection.subject.slice('caller:'.length);
      expect(store.decideSync({ caller: lookalike, method: 'GetTask' }).admitted).toBe(true);
    }
  });

  it('a long messageId is bounded in the deduplication table too', () => {
    const store = new MemoryStore({ policies: [] });
    const id = 'm'.repeat(10_000);
    expect(store.rememberMessageSync('a', id, 60_000)).toEqual({ fresh: true });
    expect(store.rememberMessageSync('a', id, 60_000)).toEqual({ fresh: false });
    expect(store.rememberMessageSync('a', `${id}2`, 60_000)).toEqual({ fresh: true });
  });
});
