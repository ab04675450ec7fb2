/**
 * @module limiter-policy-view
 * Everything the limiter derives from its policy set, computed in one place so a live policy change
 * recomputes all of it at once.
 */

import { type A2AMethod, MESSAGE_METHODS } from '../core/a2a-methods.js';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import { policySetVersion } from '../core/policy-set-version.js';
import type { LeaseRef } from '../core/rejection.js';
import { DEFAULT_LIMITER_OPTIONS, type LeaseHoldUntil } from './limiter-options.js';

/** What the limiter derives from one policy set. */
export interface LimiterPolicyView {
  readonly set: CompiledPolicySet;
  /** {@link policySetVersion} of `set`. */
  readonly version: string;
  /** By policy index: the hold of its leases when an option or the policy says, else undefined. */
  readonly holdUntil: readonly (LeaseHoldUntil | undefined)[];
  /** Policies a resubscription is decided under (see `Limiter.admitResubscription`). */
  readonly resubscriptionIndexes: readonly number[];
  /** How often live leases are renewed, ms. */
  readonly renewEveryMs: number;
  /** The longest lease TTL of the set, ms (0 without lease policies). */
  readonly maxLeaseTtlMs: number;
  /** Some overload policy reads the event-loop delay. */
  readonly wantsEventLoopDelay: boolean;
}

/** The limiter options the view depends on. */
export interface PolicyViewOptions {
  /** Per policy name (`leases.holdUntil`); names absent from the set are ignored. */
  readonly holdUntil: Readonly<Record<string, LeaseHoldUntil>>;
  /** `leases.renewEveryMs`, when given. */
  readonly renewEveryMs: number | undefined;
}

/**
 * Derives the view of `set`.
 *
 * @example
 * ```ts
 * const view = limiterPolicyView(limiter.policySet, { holdUntil: {}, renewEveryMs: undefined });
 * view.renewEveryMs; // 200_000 for the default 600 s lease TTL
 * ```
 */
export function limiterPolicyView(
  set: CompiledPolicySet,
  options: PolicyViewOptions,
): LimiterPolicyView {
  const holdUntil = set.policies.map(
    (p) => options.holdUntil[p.name] ?? (p.kind === 'concurrency' ? p.holdUntil : undefined),
  );
  const resubscriptionIndexes = set.policies
    .filter(
      (p) =>
        (!p.shadow && p.methods.has('SubscribeToTask')) ||
        (!p.shadow &&
          p.methods.has('SendStreamingMessage') &&
          p.kind !== 'rate' &&
          (holdUntil[p.index] ?? (p.kind === 'concurrency' ? 'task' : 'response')) === 'response'),
    )
    .map((p) => p.index);
  const ttls = set.policies.map((p) =>
    p.kind === 'rate' ? Number.POSITIVE_INFINITY : p.leaseTtlMs,
  );
  const { minRenewEveryMs, maxRenewEveryMs } = DEFAULT_LIMITER_OPTIONS.leases;
  return {
    set,
    version: policySetVersion(set),
    holdUntil,
    resubscriptionIndexes,
    renewEveryMs:
      options.renewEveryMs ??
      Math.max(minRenewEveryMs, Math.floor(Math.min(...ttls, maxRenewEveryMs * 3) / 3)),
    maxLeaseTtlMs: Math.max(0, ...set.policies.map((p) => (p.kind === 'rate' ? 0 : p.leaseTtlMs))),
    wantsEventLoopDelay: set.policies.some(
      (p) => p.kind === 'overload' && Number.isFinite(p.maxEventLoopDelayMs),
    ),
  };
}

/**
 * How long a lease taken for `method` is held: as its policy's view says, else until the task
 * ends for concurrency leases of messages (a limit on tasks), else until the response ends
 * (overload counts requests in flight; other methods' leases end with their response).
 */
export function leaseHoldUntil(
  view: LimiterPolicyView,
  lease: LeaseRef,
  method: A2AMethod,
): LeaseHoldUntil {
  return (
    view.holdUntil[lease.policyIndex] ??
    (view.set.policies[lease.policyIndex]?.kind === 'concurrency' && MESSAGE_METHODS.has(method)
      ? 'task'
      : 'response')
  );
}

/**
 * Maps leases taken under `from` onto `to`: a lease keeps its key and id and takes the index of
 * the policy of the same name and kind in `to`; a lease whose policy is gone is dropped (the store
 * dropped its state). Undefined when every policy keeps its index (nothing to map).
 *
 * @example
 * ```ts
 * const map = leaseMapping(before, after);
 * const kept = map === undefined ? leases : map(leases);
 * ```
 */
export function leaseMapping(
  from: CompiledPolicySet,
  to: CompiledPolicySet,
): ((leases: readonly LeaseRef[]) => LeaseRef[]) | undefined {
  const indexes = from.policies.map((p) => {
    const q = to.policies.find((n) => n.name === p.name && n.kind === p.kind);
    return q === undefined ? -1 : q.index;
  });
  if (indexes.every((to, from) => to === from)) return undefined;
  return (leases) => {
    const out: LeaseRef[] = [];
    for (const lease of leases) {
      const index = indexes[lease.policyIndex] ?? -1;
      if (index < 0) continue;
      out.push(index === lease.policyIndex ? lease : { ...lease, policyIndex: index });
    }
    return out;
  };
}
