/**
 * Live policy changes at the limiter (`limiter.updatePolicies`): state kept per policy name, new
 * limits at once, removed policies stop, a bad set changes nothing, everything the limiter derives
 * from the set follows (card, resubscriptions, shadow policies), and leases of a removed policy
 * end harmlessly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { Policy } from '../core/policy.js';
import { PolicyError } from '../core/policy-error.js';
import { MemoryStore } from '../store/memory-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import {
  followPolicyChanges,
  RATE_LIMIT_EXTENSION_URI,
  rateLimitExtension,
  withRateLimitExtension,
} from './card-extension.js';
import { createLimiter } from './limiter.js';
import type { AdmissionOutcome, Limiter } from './limiter-api.js';
import type { LimiterOptions } from './limiter-options.js';

const T0 = 1_760_000_000_000;
const limiters: Limiter[] = [];
afterEach(async () => {
  await Promise.all(limiters.splice(0).map((l) => l.close()));
});

const rate = (name: string, burst: number, methods: Policy['methods'] = ['GetTask']): Policy => ({
  name,
  kind: 'rate',
  methods,
  limit: 60,
  windowSeconds: 60,
  burst,
});
const SLOTS: Policy = { name: 'slots', kind: 'concurrency', methods: ['SendMessage'], max: 1 };

function setup(policies: readonly Policy[], extra: Partial<LimiterOptions> = {}) {
  const clock = new ManualClock(T0);
  const limiter = createLimiter({
    policies,
    clock,
    domain: 'agents.example.com',
    eventLoopDelay: false,
    ...extra,
  });
  limiters.push(limiter);
  const get = (caller = 'a') =>
    limiter.admit({ caller, method: 'GetTask', binding: 'rest' }) as AdmissionOutcome;
  return { clock, limiter, get };
}

const admittedCount = (n: number, f: () => AdmissionOutcome): number => {
  let admitted = 0;
  for (let i = 0; i < n; i++) {
    const o = f();
    if (o.status === 'admitted') {
      admitted++;
      o.ticket.end();
    }
  }
  return admitted;
};

describe('limiter.updatePolicies', () => {
  it('keeps a kept policy’s state (a spent caller stays spent, order changed); a changed limit applies at once; a removed policy stops', async () => {
    const { limiter, get } = setup([rate('per-caller', 5), rate('strict', 3)]);
    expect(admittedCount(6, get)).toBe(3); // strict refuses the 4th; per-caller charged 3
    const before = limiter.policySetVersion;
    // Reordered, strict removed, a new policy on another method.
    await limiter.updatePolicies([rate('other', 1, ['ListTasks']), rate('per-caller', 5)]);
    expect(limiter.policySet.policies.map((p) => p.name)).toEqual(['other', 'per-caller']);
    expect(limiter.policySetVersion).not.toBe(before);
    // strict no longer refuses; per-caller kept its 3 spent tokens: 2 more, not a fresh 5.
    expect(admittedCount(6, get)).toBe(2);
    const refused = get();
    expect(refused.status === 'rejected' && refused.rejection.policy).toBe('per-caller');
    // per-caller's burst 5 → 6 applies at once: exactly one more for the spent caller.
    await limiter.updatePolicies([rate('per-caller', 6)]);
    expect(admittedCount(3, get)).toBe(1);
    expect(admittedCount(8, () => get('b'))).toBe(6);
  });

  it('refuses a bad set with a PolicyError naming the field; the old set keeps working', async () => {
    const { limiter, get } = setup([rate('per-caller', 2)]);
    const version = limiter.policySetVersion;
    const set = limiter.policySet;
    const bad = [{ name: 'per-caller', kind: 'rate', limit: 0, windowSeconds: 60 }] as Policy[];
    const error = await limiter.updatePolicies(bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolicyError);
    expect(error).toMatchObject({ policy: 'per-caller', field: 'limit' });
    await expect(limiter.updatePolicies([rate('x', 1), rate('x', 2)])).rejects.toThrow(PolicyError);
    expect(limiter.policySet).toBe(set);
    expect(limiter.store.policySet).toBe(set);
    expect(limiter.policySetVersion).toBe(version);
    expect(admittedCount(3, get)).toBe(2);
  });

  it('the same policies give the same version on another limiter; the card follows the set', async () => {
    const { limiter } = setup([rate('per-caller', 2)]);
    const other = setup([{ ...rate('per-caller', 2) }]).limiter;
    expect(other.policySetVersion).toBe(limiter.policySetVersion);
    expect(limiter.policySetVersion).toMatch(/^[0-9a-f]{16}$/);
    const published = () =>
      rateLimitExtension(limiter).params.policies.map((p) => [p.name, 'burst' in p && p.burst]);
    expect(published()).toEqual([['per-caller', 2]]);
    await limiter.updatePolicies([rate('per-caller', 7), SLOTS]);
    expect(published()).toEqual([
      ['per-caller', 7],
      ['slots', false],
    ]);
    await other.updatePolicies([rate('per-caller', 7), SLOTS]);
    expect(other.policySetVersion).toBe(limiter.policySetVersion);
  });

  it('a served card object follows every change in place; listeners hear each set once', async () => {
    const { limiter } = setup([rate('per-caller', 2)]);
    const other = { uri: 'https://example.com/other-extension' };
    const card = withRateLimitExtension({ capabilities: { extensions: [other] } }, limiter);
    const held = card.capabilities.extensions; // the array the SDK's handler serves from
    const heard: string[] = [];
    const stopListening = limiter.onPoliciesChanged((set) =>
      heard.push(set.policies.map((p) => p.name).join(',')),
    );
    const stop = followPolicyChanges(card, limiter);
    const limits = () =>
      held
        .filter((e) => (e as { uri?: string }).uri === RATE_LIMIT_EXTENSION_URI)
        .map((e) =>
          (e as ReturnType<typeof rateLimitExtension>).params.policies.map((p) =>
            'burst' in p ? p.burst : p.name,
          ),
        );
    expect(limits()).toEqual([[2]]);
    await limiter.updatePolicies([rate('per-caller', 9), SLOTS]);
    expect(limits()).toEqual([[9, 'slots']]);
    expect(held[0]).toBe(other);
    stop();
    stopListening();
    await limiter.updatePolicies([rate('per-caller', 4)]);
    expect(limits()).toEqual([[9, 'slots']]);
    expect(heard).toEqual(['per-caller,slots']);
  });

  it('leases of a kept policy stay releasable after it moved; leases of a removed policy end harmlessly', async () => {
    const { limiter } = setup([SLOTS]);
    const store = limiter.store as MemoryStore;
    const send = (messageId: string) =>
      limiter.admit({ caller: 'a', method: 'SendMessage', messageId, binding: 'rest' });
    const first = await send('m1');
    expect(first.status).toBe('admitted');
    expect((await send('m2')).status).toBe('rejected');
    // slots moves from index 0 to 1: the open ticket's lease follows it.
    await limiter.updatePolicies([rate('per-caller', 10), SLOTS]);
    expect((await send('m3')).status).toBe('rejected');
    expect(limiter.leasesHeld()).toBe(1);
    if (first.status === 'admitted') first.ticket.end();
    expect(limiter.leasesHeld()).toBe(0);
    expect(store.stats().leases).toBe(0);
    const again = await send('m4');
    expect(again.status).toBe('admitted');
    // slots removed while m4 holds a lease: the store dropped it; ending the ticket is harmless.
    await limiter.updatePolicies([rate('per-caller', 10)]);
    expect(limiter.leasesHeld()).toBe(0);
    expect(() => (again.status === 'admitted' ? again.ticket.end() : undefined)).not.toThrow();
    expect(limiter.leasesHeld()).toBe(0);
  });

  it('resubscriptions and shadow policies follow the new set', async () => {
    const shadowRefusals: string[] = [];
    const { limiter } = setup([rate('per-caller', 10)], {
      shadowLog: false,
      observer: { shadowRejected: (_r, rejection) => shadowRefusals.push(rejection.policy) },
    });
    const resubscribe = () =>
      limiter.admitResubscription({
        caller: 'a',
        method: 'SendStreamingMessage',
        binding: 'rest',
      }) as AdmissionOutcome;
    expect(admittedCount(3, resubscribe)).toBe(3);
    await limiter.updatePolicies([
      rate('per-caller', 10),
      rate('streams', 1, ['SubscribeToTask']),
      { ...rate('dry-run', 1, ['GetTask']), mode: 'shadow' },
    ]);
    expect(admittedCount(3, resubscribe)).toBe(1);
    const get = () => limiter.admit({ caller: 'a', method: 'GetTask', binding: 'rest' });
    expect(admittedCount(3, get as () => AdmissionOutcome)).toBe(3);
    expect(shadowRefusals).toEqual(['dry-run', 'dry-run']);
  });

  it('adopts a set another replica published (store.onPoliciesChanged)', async () => {
    const listeners: ((set: CompiledPolicySet) => void)[] = [];
    class AnnouncingStore extends MemoryStore {
      onPoliciesChanged(listener: (set: CompiledPolicySet) => void): () => void {
        listeners.push(listener);
        return () => listeners.splice(listeners.indexOf(listener), 1);
      }
    }
    const clock = new ManualClock(T0);
    const store = new AnnouncingStore({ policies: [rate('per-caller', 2)], clock });
    const limiter = createLimiter({ store, clock, domain: 'agents.example.com' });
    limiters.push(limiter);
    const peer = new MemoryStore({ policies: [rate('per-caller', 5), SLOTS] });
    await store.updatePolicies(peer.policySet);
    for (const l of listeners) l(peer.policySet);
    expect(limiter.policySet).toBe(peer.policySet);
    expect(rateLimitExtension(limiter).params.policies.map((p) => p.name)).toEqual([
      'per-caller',
      'slots',
    ]);
    await limiter.close();
    limiters.pop();
    expect(listeners).toHaveLength(0);
  });

  it('an asynchronous store: a decision made under the old set keeps a lease that still releases', async () => {
    const memory = new MemoryStore({ policies: [{ ...SLOTS, methods: ['CancelTask'] }] });
    // Async only (no synchronous capability): the limiter's shared path.
    const store = {
      get policySet() {
        return memory.policySet;
      },
      decide: memory.decide.bind(memory),
      release: memory.release.bind(memory),
      renew: memory.renew.bind(memory),
      rememberMessage: memory.rememberMessage.bind(memory),
      recordMessageTask: memory.recordMessageTask.bind(memory),
      updatePolicies: memory.updatePolicies.bind(memory),
      close: memory.close.bind(memory),
    };
    const limiter = createLimiter({ store, domain: 'agents.example.com', dedup: false });
    limiters.push(limiter);
    const cancel = () => limiter.admit({ caller: 'a', method: 'CancelTask', binding: 'rest' });
    const inFlight = cancel(); // decided now, under the old set (slots at index 0)
    const update = limiter.updatePolicies([
      rate('per-caller', 10),
      { ...SLOTS, methods: ['CancelTask'] },
    ]);
    const held = await inFlight;
    await update;
    expect(limiter.policySet.policies.map((p) => p.name)).toEqual(['per-caller', 'slots']);
    expect(held.status).toBe('admitted');
    expect((await cancel()).status).toBe('rejected');
    if (held.status === 'admitted') held.ticket.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(memory.stats().leases).toBe(0);
    expect(limiter.leasesHeld()).toBe(0);
    expect((await cancel()).status).toBe('admitted');
  });

  it('a new set keeps the hold options the limiter was made with', async () => {
    const { limiter } = setup([rate('per-caller', 2)], {
      holds: { maxNoShows: 1, maxHoldsPerKey: 7, minGraceMs: 1234.5, graceFraction: 0.25 },
    });
    const holds = limiter.policySet.holds;
    await limiter.updatePolicies([rate('per-caller', 3)]);
    expect(limiter.policySet.holds).toEqual(holds);
    expect(holds).toEqual({
      maxNoShows: 1,
      maxHoldsPerKey: 7,
      minGraceUs: 1_234_500,
      graceFraction: 0.25,
    });
  });

  it('rejects when the store cannot change its policies', async () => {
    const memory = new MemoryStore({ policies: [rate('per-caller', 2)] });
    const fixed = {
      policySet: memory.policySet,
      decide: memory.decide.bind(memory),
      release: memory.release.bind(memory),
      renew: memory.renew.bind(memory),
      rememberMessage: memory.rememberMessage.bind(memory),
      recordMessageTask: memory.recordMessageTask.bind(memory),
      close: memory.close.bind(memory),
    };
    const limiter = createLimiter({ store: fixed, domain: 'agents.example.com' });
    limiters.push(limiter);
    await expect(limiter.updatePolicies([rate('per-caller', 3)])).rejects.toThrow(
      /cannot change its policies/,
    );
  });
});
