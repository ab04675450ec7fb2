/**
 * One deduplication protocol: the limiter takes the in-process path for any store with the
 * synchronous capability, whatever its class. A wrapper that forwards to a MemoryStore (and is
 * not an instance of it) behaves exactly as the MemoryStore itself, synchronously too; a store
 * with half the capability is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { DecisionInput } from '../core/decision-state.js';
import type { LeaseRef } from '../core/rejection.js';
import { WORKED_EXAMPLE_POLICY } from '../simulation/worked-example-policy.js';
import { MemoryStore } from '../store/memory-store.js';
import type { Store, SynchronousStore } from '../store/store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { createLimiter } from './limiter.js';
import type { AdmissionOutcome, Limiter } from './limiter-api.js';

/** Forwards every call to a MemoryStore it is not an instance of (as a second installed copy). */
class ForwardingStore implements Store, SynchronousStore {
  constructor(private readonly inner: MemoryStore) {}
  get policySet(): CompiledPolicySet {
    return this.inner.policySet;
  }
  decide = (input: DecisionInput) => this.inner.decide(input);
  release = (leases: readonly LeaseRef[]) => this.inner.release(leases);
  renew = (leases: readonly LeaseRef[]) => this.inner.renew(leases);
  rememberMessage = (c: string, m: string, ttl: number) => this.inner.rememberMessage(c, m, ttl);
  recordMessageTask = (c: string, m: string, t: string, ttl: number) =>
    this.inner.recordMessageTask(c, m, t, ttl);
  close = () => this.inner.close();
  decideSync = (input: DecisionInput) => this.inner.decideSync(input);
  releaseSync = (leases: readonly LeaseRef[]) => this.inner.releaseSync(leases);
  renewSync = (leases: readonly LeaseRef[]) => this.inner.renewSync(leases);
  peekMessageKeySync = (key: string) => this.inner.peekMessageKeySync(key);
  rememberMessageKeySync = (key: string, ttl: number) =>
    this.inner.rememberMessageKeySync(key, ttl);
  forgetMessageKeySync = (key: string) => this.inner.forgetMessageKeySync(key);
  recordMessageTaskKeySync = (key: string, taskId: string, ttl: number) =>
    this.inner.recordMessageTaskKeySync(key, taskId, ttl);
}

const limiters: Limiter[] = [];
afterEach(async () => {
  await Promise.all(limiters.splice(0).map((l) => l.close()));
});

type Kind = 'memory' | 'wrapper';

function setup(kind: Kind) {
  const clock = new ManualClock(1_760_000_000_000);
  const memory = new MemoryStore({ policies: [WORKED_EXAMPLE_POLICY], clock });
  const store = kind === 'memory' ? memory : new ForwardingStore(memory);
  const limiter = createLimiter({
    store,
    clock,
    domain: 'agents.example.com',
    dedup: { waitForTaskMs: 20 },
  });
  limiters.push(limiter);
  return { clock, memory, limiter };
}

/** What a test compares: the outcome without its ticket object. */
function shape(o: AdmissionOutcome) {
  if (o.status === 'admitted') return { status: o.status, claimed: o.ticket.claimedHold };
  if (o.status === 'duplicate') return o;
  return { status: o.status, policy: o.rejection.policy, retryAfterMs: o.rejection.retryAfterMs };
}

/** One scenario through the limiter's dedup path; returns its trace. */
async function scenario(kind: Kind) {
  const { clock, memory, limiter } = setup(kind);
  const trace: unknown[] = [];
  const send = (messageId: string) =>
    limiter.admit({ caller: 'orchestrator-7', method: 'SendMessage', messageId, binding: 'rest' });
  // A fresh message is decided synchronously (no Promise): the in-process path.
  const first = send('m-1');
  trace.push({ synchronous: !(first instanceof Promise) });
  const admitted = await first;
  trace.push(shape(admitted));
  trace.push(shape(await send('m-1'))); // in progress: retry in 1 s
  if (admitted.status === 'admitted') {
    (admitted.ticket as unknown as { settleDedup(id: string): void }).settleDedup('task-1');
    admitted.ticket.end();
  }
  trace.push(shape(await send('m-1'))); // its task
  for (let i = 0; i < 9; i++) {
    const o = await send(`burst-${i}`);
    if (o.status === 'admitted') o.ticket.end(); // ended untracked: never run again
  }
  trace.push(shape(await send('burst-4')));
  const late = await send('late'); // rejected, reserves a slot; nothing recorded
  trace.push(shape(late), memory.stats().messageRecords);
  clock.advance(late.status === 'rejected' ? late.rejection.retryAfterMs : 0);
  trace.push(shape(await send('late'))); // claims its hold
  return trace;
}

describe('one deduplication protocol for every in-process store', () => {
  it('a forwarding wrapper (not an instance of MemoryStore) takes exactly the path MemoryStore takes', async () => {
    const memory = await scenario('memory');
    const wrapper = await scenario('wrapper');
    expect(memory).toEqual([
      { synchronous: true },
      { status: 'admitted', claimed: false },
      { status: 'rejected', policy: 'deduplication', retryAfterMs: 1000 },
      { status: 'duplicate', taskId: 'task-1' },
      { status: 'duplicate', taskId: undefined },
      { status: 'rejected', policy: 'per-caller', retryAfterMs: 1000 },
      10,
      { status: 'admitted', claimed: true },
    ]);
    expect(wrapper).toEqual(memory);
  });

  it('a store with only some of the synchronous methods is refused', () => {
    const memory = new MemoryStore({ policies: [WORKED_EXAMPLE_POLICY] });
    const half: Store = {
      policySet: memory.policySet,
      decide: (i) => memory.decide(i),
      release: (l) => memory.release(l),
      renew: (l) => memory.renew(l),
      rememberMessage: (c, m, t) => memory.rememberMessage(c, m, t),
      recordMessageTask: (c, m, t, ttl) => memory.recordMessageTask(c, m, t, ttl),
      close: () => memory.close(),
      decideSync: (i) => memory.decideSync(i),
    };
    expect(() => createLimiter({ store: half, domain: 'agents.example.com' })).toThrow(
      /has decideSync but not releaseSync/,
    );
  });
});
