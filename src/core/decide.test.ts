import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { Policy } from './policy.js';
import { wireDelaySeconds } from './rejection.js';

const T0 = 1_760_000_000_000;
const perCaller: Policy = {
  name: 'per-caller',
  kind: 'rate',
  limit: 60,
  windowSeconds: 60,
  burst: 10,
  methods: ['SendMessage'],
};

function fixture(policies: Policy[] = [perCaller], minGraceMs = 3000) {
  const clock = new ManualClock(T0);
  const store = new MemoryStore({ policies, clock, holds: { minGraceMs } });
  const send = (messageId?: string, caller = 'a') =>
    store.decideSync({ caller, method: 'SendMessage', ...(messageId ? { messageId } : {}) });
  return { clock, store, send };
}

describe('decide: holds and grace', () => {
  it('a retry inside [slot, slot + grace] claims; after it the hold was refunded', () => {
    const { clock, send, store } = fixture();
    for (let i = 0; i < 10; i++) send(`b${i}`);
    const r = send('m');
    expect(r.admitted).toBe(false);
    if (r.admitted) return;
    expect(r.rejection.retryAfterMs).toBe(1000);
    clock.set(T0 + 1000 + 2999);
    const claim = send('m');
    expect(claim).toMatchObject({ admitted: true, claimedHold: true });
    expect(store.stats().holds).toBe(0);

    // The bucket refilled meanwhile: drain it, then the next request gets a hold.
    let id = 'n';
    let r2 = send(id);
    for (let i = 0; r2.admitted && i < 20; i++) {
      id = `n${i}`;
      r2 = send(id);
    }
    expect(r2.admitted).toBe(false);
    if (r2.admitted) return;
    const slot = clock.nowMs() + r2.rejection.retryAfterMs;
    clock.set(slot + 3001); // grace is max(3 s, 10%): missed by 1 ms
    expect(store.stats().holds).toBe(1);
    const late = send(id);
    expect(late.admitted).toBe(true);
    expect(late.admitted && late.claimedHold).toBe(false);
    expect(store.stats().holds).toBe(0);
  });

  it('grace grows with the delay: 10% of a long delay', () => {
    const slow: Policy = { ...perCaller, limit: 1, windowSeconds: 3600, burst: 1 };
    const { clock, send } = fixture([slow]);
    send('first');
    const r = send('m');
    if (r.admitted) throw new Error('expected rejection');
    expect(r.rejection.retryAfterMs).toBe(3_600_000);
    clock.set(T0 + 3_600_000 + 300_000); // 5 min late, inside 10% of an hour
    expect(send('m')).toMatchObject({ admitted: true, claimedHold: true });
  });

  it('wire seconds are rounded up and never 0', () => {
    expect(wireDelaySeconds(0)).toBe(1);
    expect(wireDelaySeconds(1)).toBe(1);
    expect(wireDelaySeconds(999)).toBe(1);
    expect(wireDelaySeconds(1000)).toBe(1);
    expect(wireDelaySeconds(1001)).toBe(2);
    expect(wireDelaySeconds(Number.NaN)).toBe(1);
  });

  it('a rejection by a non-rate policy reserves nothing and says so only for rate', () => {
    const { send } = fixture([perCaller, { name: 'tasks', kind: 'concurrency', max: 1 }]);
    expect(send('m1').admitted).toBe(true);
    const r = send('m2');
    expect(r.admitted).toBe(false);
    if (r.admitted) return;
    expect(r.rejection.policy).toBe('tasks');
    expect(r.rejection.reserved).toBeUndefined();
    // The per-caller token of the rejected request was not spent.
    const ok = r.limits.find((l) => l.policy === 'per-caller');
    expect(ok?.remaining).toBe(9);
  });

  it('event-loop overload rejects with at least 1 s and 2× the lag', () => {
    const { store } = fixture([{ name: 'lag', kind: 'overload', maxEventLoopDelayMs: 100 }]);
    const ok = store.decideSync({ caller: 'a', method: 'GetTask', eventLoopDelayMs: 50 });
    expect(ok.admitted).toBe(true);
    const r = store.decideSync({ caller: 'a', method: 'GetTask', eventLoopDelayMs: 700 });
    expect(r.admitted).toBe(false);
    if (!r.admitted) {
      expect(r.rejection).toMatchObject({ kind: 'overload', scope: 'agent', retryAfterMs: 1400 });
    }
  });

  it('concurrency delay follows observed hold times', () => {
    const { clock, store } = fixture([{ name: 'tasks', kind: 'concurrency', max: 1 }]);
    for (let i = 0; i < 3; i++) {
      const d = store.decideSync({ caller: 'a', method: 'GetTask' });
      clock.advance(5000);
      if (d.admitted) store.releaseSync(d.leases);
    }
    store.decideSync({ caller: 'a', method: 'GetTask' });
    const r = store.decideSync({ caller: 'a', method: 'GetTask' });
    expect(r.admitted).toBe(false);
    if (!r.admitted) expect(r.rejection.retryAfterMs).toBe(5000);
  });
});

describe('decide: long-run bound (property)', () => {
  it('admissions by any time t ≤ burst + rate × (t − t0 + grace), whatever callers do', () => {
    const limit = 10;
    const windowSeconds = 2;
    const burst = 3;
    const graceMs = 3000;
    const rate: Policy = { ...perCaller, limit, windowSeconds, burst };
    const event = fc.record({
      stepMs: fc.integer({ min: 0, max: 700 }),
      messageId: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
      obey: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 300 }), (events) => {
        const { clock, send } = fixture([rate], graceMs);
        const due: { atMs: number; messageId: string }[] = [];
        let admitted = 0;
        const check = () => {
          const elapsedMs = clock.nowMs() - T0;
          const bound = burst + (limit * (elapsedMs + graceMs)) / (windowSeconds * 1000);
          expect(admitted).toBeLessThanOrEqual(Math.floor(bound) + 1e-9);
        };
        for (const e of events) {
          const target = clock.nowMs() + e.stepMs;
          // Obedient retries that fall due first.
          due.sort((x, y) => x.atMs - y.atMs);
          while (due.length > 0 && (due[0]?.atMs ?? Infinity) <= target) {
            const d = due.shift();
            if (!d) break;
            clock.set(d.atMs);
            if (send(d.messageId).admitted) admitted++;
            check();
          }
          clock.set(target);
          const id = e.messageId === undefined ? undefined : `m${e.messageId}`;
          const r = send(id);
          if (r.admitted) admitted++;
          else if (e.obey && id !== undefined) {
            due.push({
              atMs: clock.nowMs() + wireDelaySeconds(r.rejection.retryAfterMs) * 1000,
              messageId: id,
            });
          }
          check();
        }
      }),
      { numRuns: 200 },
    );
  });

  it('every rejection delay is positive and finite', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2000 }), fc.boolean()), { maxLength: 200 }),
        (steps) => {
          const { clock, send } = fixture();
          let n = 0;
          for (const [stepMs, withId] of steps) {
            clock.advance(stepMs);
            const d = send(withId ? `m${n++}` : undefined);
            if (!d.admitted) {
              expect(d.rejection.retryAfterMs).toBeGreaterThan(0);
              expect(Number.isFinite(d.rejection.retryAfterMs)).toBe(true);
            }
          }
        },
      ),
    );
  });
});
