import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { callerShareOf } from './caller-share.js';
import { compilePolicies } from './compile-policies.js';
import type { Policy } from './policy.js';
import { isPolicyError } from './policy-error.js';
import type { Decision, Rejection } from './rejection.js';

const T0 = 1_760_000_000_000;

function rejectionOf(d: Decision): Rejection {
  if (d.admitted) throw new Error('admitted');
  return d.rejection;
}

describe('caller share of an overload policy', () => {
  it('defaults to 10 % of maxInFlight, at least 10, none when not below maxInFlight', () => {
    expect(callerShareOf('o', 500, undefined)).toBe(50);
    expect(callerShareOf('o', 20, undefined)).toBe(10);
    expect(callerShareOf('o', 101, undefined)).toBe(11);
    expect(callerShareOf('o', 10, undefined)).toBeUndefined();
    expect(callerShareOf('o', Number.POSITIVE_INFINITY, undefined)).toBeUndefined();
    expect(callerShareOf('o', 500, false)).toBeUndefined();
    expect(callerShareOf('o', 500, 7)).toBe(7);
    expect(callerShareOf('o', 5, 7)).toBeUndefined();
  });

  it('refuses a share that is not a positive integer, or one without maxInFlight', () => {
    for (const bad of [0, -1, 1.5, '3', true]) {
      const attempt = () =>
        compilePolicies([
          { name: 'o', kind: 'overload', maxInFlight: 50, maxInFlightPerCaller: bad as never },
        ]);
      expect(attempt).toThrow(/maxInFlightPerCaller/);
    }
    try {
      compilePolicies([
        { name: 'o', kind: 'overload', maxEventLoopDelayMs: 100, maxInFlightPerCaller: 3 },
      ]);
      expect.unreachable();
    } catch (error) {
      expect(isPolicyError(error) && error.field).toBe('maxInFlightPerCaller');
    }
  });

  it('is applied right after its policy, for every method the policy covers', () => {
    const set = compilePolicies([
      { name: 'rate', kind: 'rate', limit: 10, windowSeconds: 1, methods: ['SendMessage'] },
      { name: 'agent-overload', kind: 'overload', maxInFlight: 40 },
    ]);
    const names = (m: 'SendMessage' | 'GetTask') =>
      set.forMethod(m).map((p) => `${p.name}/${p.kind}/${p.scopeName}`);
    expect(names('SendMessage')).toEqual([
      'rate/rate/caller',
      'agent-overload/overload/agent',
      'agent-overload/concurrency/caller',
    ]);
    expect(names('GetTask')).toEqual([
      'agent-overload/overload/agent',
      'agent-overload/concurrency/caller',
    ]);
    // A separate script row, the same index (and so the same name and lease table).
    const share = set.forMethod('GetTask')[1];
    expect(share?.index).toBe(1);
    expect(share?.paramIndex).toBe(2);
    expect(set.rows).toHaveLength(3);
  });

  it('one caller holding its share is refused alone (quota, callerShare); others are served', () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({
      policies: [{ name: 'agent-overload', kind: 'overload', maxInFlight: 20 }],
      clock,
    });
    const ask = (caller: string) => store.decideSync({ caller, method: 'GetTask' });
    for (let i = 0; i < 10; i++) expect(ask('mallory').admitted).toBe(true);
    const refused = rejectionOf(ask('mallory'));
    expect(refused).toMatchObject({
      kind: 'quota',
      policy: 'agent-overload',
      scope: 'caller',
      subject: 'caller:mallory',
      signal: 'callerShare',
      quota: { limit: 10, remaining: 0 },
    });
    expect(refused.message).toContain('caller share: 10 of 20 requests in flight');
    expect(refused.retryAfterMs).toBeGreaterThanOrEqual(1000);
    // Others still get the other half; once the agent is full, the refusal is overload.
    for (let i = 0; i < 10; i++) expect(ask(`c${i}`).admitted).toBe(true);
    const full = rejectionOf(ask('alice'));
    expect(full).toMatchObject({ kind: 'overload', scope: 'agent', signal: 'inFlight' });
    expect(full.message).toContain('20 requests in flight');
  });

  it('an admission holds two leases (agent, caller) and releasing frees both', () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({
      policies: [{ name: 'o', kind: 'overload', maxInFlight: 4, maxInFlightPerCaller: 1 }],
      clock,
    });
    const first = store.decideSync({ caller: 'a', method: 'GetTask' });
    expect(first.admitted && first.leases.map((l) => l.key)).toEqual(['agent', 'caller:a']);
    expect(rejectionOf(store.decideSync({ caller: 'a', method: 'GetTask' })).signal).toBe(
      'callerShare',
    );
    if (first.admitted) store.releaseSync(first.leases);
    expect(store.stats().leases).toBe(0);
    expect(store.decideSync({ caller: 'a', method: 'GetTask' }).admitted).toBe(true);
  });

  it('a caller named "agent" has a share key of its own', () => {
    const store = new MemoryStore({
      policies: [{ name: 'o', kind: 'overload', maxInFlight: 3, maxInFlightPerCaller: 2 }],
      clock: new ManualClock(T0),
    });
    expect(store.decideSync({ caller: 'agent', method: 'GetTask' }).admitted).toBe(true);
    expect(store.decideSync({ caller: 'agent', method: 'GetTask' }).admitted).toBe(true);
    expect(rejectionOf(store.decideSync({ caller: 'agent', method: 'GetTask' })).signal).toBe(
      'callerShare',
    );
    expect(store.decideSync({ caller: 'b', method: 'GetTask' }).admitted).toBe(true);
  });

  it('overload refusals name the signal that fired: event-loop delay or requests in flight', () => {
    const policies: Policy[] = [
      { name: 'guard', kind: 'overload', maxInFlight: 100, maxEventLoopDelayMs: 250 },
    ];
    const store = new MemoryStore({ policies, clock: new ManualClock(T0) });
    const lagging = rejectionOf(
      store.decideSync({ caller: 'a', method: 'GetTask', eventLoopDelayMs: 400 }),
    );
    expect(lagging).toMatchObject({ kind: 'overload', signal: 'eventLoopDelay' });
    expect(lagging.message).toBe(
      'Agent overloaded (guard: event-loop delay 400 ms over 250 ms); retry in 1 s',
    );
    expect(lagging.message).not.toContain('in flight');
    const only = new MemoryStore({
      policies: [{ name: 'lag', kind: 'overload', maxEventLoopDelayMs: 50 }],
      clock: new ManualClock(T0),
    });
    const r = rejectionOf(
      only.decideSync({ caller: 'a', method: 'GetTask', eventLoopDelayMs: 60 }),
    );
    expect(r.signal).toBe('eventLoopDelay');
    expect(r.message).toContain('event-loop delay 60 ms over 50 ms');
  });
});
