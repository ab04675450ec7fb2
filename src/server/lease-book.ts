/**
 * @module lease-book
 * The leases this process holds, counted, and their release and renewal in the store (in the
 * background unless the store is in-process).
 */

import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { LeaseRef } from '../core/rejection.js';
import type { Store, SynchronousStore } from '../store/store.js';
import type { LimiterObserver } from './limiter-options.js';

/**
 * Lease counts and store calls of one limiter.
 *
 * @example
 * ```ts
 * const book = new LeaseBook(store, synchronousStore(store), observer, () => limiter.policySet);
 * book.taken(admission.leases);
 * book.release(admission.leases);
 * ```
 */
export class LeaseBook {
  /** Leases held. */
  private held = 0;
  /** Leases of overload policies held (the requests in flight they count). */
  private overload = 0;

  constructor(
    private readonly store: Store,
    private readonly local: SynchronousStore | undefined,
    private readonly observer: LimiterObserver | undefined,
    private readonly policies: () => CompiledPolicySet,
  ) {}

  /** Leases this process holds. */
  count(): number {
    return this.held;
  }

  /** Requests this process holds in flight under overload policies. */
  inFlight(): number {
    return this.overload;
  }

  /** Counts leases taken at admission. */
  taken(leases: readonly LeaseRef[]): void {
    if (leases.length === 0) return;
    this.delta(leases.length);
    this.overload += this.overloadLeases(leases);
  }

  /** Frees leases in the store (unknown ones are ignored there) and in the counts. */
  release(leases: readonly LeaseRef[]): void {
    if (leases.length === 0) return;
    this.forget(leases);
    if (this.local !== undefined) this.local.releaseSync(leases);
    else void this.store.release(leases).catch(() => undefined);
  }

  /** Forgets leases in the counts only, without a store call. */
  forget(leases: readonly LeaseRef[]): void {
    if (leases.length === 0) return;
    this.delta(-leases.length);
    this.overload -= this.overloadLeases(leases);
  }

  /** Renews live leases. */
  renew(leases: readonly LeaseRef[]): void {
    if (leases.length === 0) return;
    if (this.local !== undefined) this.local.renewSync(leases);
    else void this.store.renew(leases).catch(() => undefined);
  }

  /**
   * A mapping of leases onto a new set (see `leaseMapping`) that also forgets, in the counts,
   * the leases it drops, and releases them in a shared store. Run it before the new set is in
   * force: the dropped leases are counted by the kinds of the set they were taken under.
   */
  counting(
    map: (leases: readonly LeaseRef[]) => LeaseRef[],
  ): (leases: readonly LeaseRef[]) => LeaseRef[] {
    return (leases) => {
      const kept: LeaseRef[] = [];
      const dropped: LeaseRef[] = [];
      for (const lease of leases) {
        const mapped = map([lease]);
        if (mapped.length === 0) dropped.push(lease);
        else kept.push(...mapped);
      }
      this.forget(dropped);
      // An in-process store dropped a removed policy's leases with its tables. A shared store
      // keeps them until their TTL: released here (by key and id, whatever the set says now),
      // or a policy removed and added again would count them for minutes after their tasks.
      if (this.local === undefined && dropped.length > 0) {
        void this.store.release(dropped).catch(() => undefined);
      }
      return kept;
    };
  }

  private delta(delta: number): void {
    if (delta === 0) return;
    this.held += delta;
    this.observer?.leasesHeld?.(this.held);
  }

  /**
   * Requests in flight the leases of one request stand for: one per overload policy (a caller's
   * share takes a second lease under the same policy index, not a second request).
   */
  private overloadLeases(leases: readonly LeaseRef[]): number {
    const policies = this.policies().policies;
    let n = 0;
    for (let i = 0; i < leases.length; i++) {
      const index = (leases[i] as LeaseRef).policyIndex;
      if (policies[index]?.kind !== 'overload') continue;
      let first = true;
      for (let j = 0; j < i; j++) if ((leases[j] as LeaseRef).policyIndex === index) first = false;
      if (first) n++;
    }
    return n;
  }
}
