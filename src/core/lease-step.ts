/**
 * @module lease-step
 * Concurrency and overload leases: a decision's lease step and delay estimate, and a lease's
 * release and renewal.
 */

import type { DecisionInput, DecisionState, LeasePolicy, LeaseSet } from './decision-state.js';

/**
 * Smallest delay of concurrency and overload rejections, ms. Shared with the Redis
 * script so both stores estimate identically.
 */
export const LEASE_MIN_DELAY_MS = 1000;

/**
 * Weight of a new observed lease hold time in the key's exponentially weighted mean (unitless).
 * Shared with the Redis script.
 *
 * @example
 * ```ts
 * ewmaMs = ewmaMs + LEASE_EWMA_ALPHA * (heldMs - ewmaMs);
 * ```
 */
export const LEASE_EWMA_ALPHA = 0.2;

/**
 * Frees leases not renewed before their expiry (abandoned by a crashed holder).
 */
export function pruneLeases(set: LeaseSet | undefined, nowMs: number): LeaseSet | undefined {
  if (set === undefined) return undefined;
  for (const [id, lease] of set.leases) if (lease.expiresMs <= nowMs) set.leases.delete(id);
  return set;
}

/**
 * Share of the observed mean hold time a lease that has already outlived it is still expected to
 * run (unitless). Such a lease is a long one; half a mean hold is the estimate both stores use.
 */
export const LEASE_OVERDUE_FRACTION = 0.5;

/**
 * Delay estimate for a full concurrency key, from the key's real state: each held lease is
 * expected to end one observed mean hold time (EWMA over releases on this key, by every replica
 * sharing the store) after it was acquired — or, already past that, within
 * {@link LEASE_OVERDUE_FRACTION} of it — and the request fits once `inFlight − max + 1` of them
 * (its position in line) have ended. At least {@link LEASE_MIN_DELAY_MS}.
 */
export function leaseDelayMs(set: LeaseSet, max: number, initialMs: number, nowMs: number): number {
  const holdMs = set.ewmaHoldMs ?? initialMs;
  const ends: number[] = [];
  for (const lease of set.leases.values()) {
    const left = lease.acquiredMs + holdMs - nowMs;
    ends.push(left > 0 ? left : holdMs * LEASE_OVERDUE_FRACTION);
  }
  ends.sort((a, b) => a - b);
  const ahead = Math.min(ends.length, Math.max(1, ends.length - max + 1));
  return Math.max(LEASE_MIN_DELAY_MS, Math.ceil(ends[ahead - 1] ?? 0));
}

/**
 * Whether a key's lease set (pruned at `nowMs`) holds nothing a decision reads: no lease live and
 * no released lease's expiry ahead, so its hold-time estimate is forgotten. A store may drop such a
 * set whenever it likes (a sweep, a TTL): the decision reads a dropped and a kept one alike, so
 * stores that drop at different times still decide identically.
 */
export function isSpentLeaseSet(set: LeaseSet, nowMs: number): boolean {
  return (
    set.leases.size === 0 && !(set.releasedUntilMs !== undefined && set.releasedUntilMs > nowMs)
  );
}

/**
 * Ends a lease: frees its slot and feeds its hold time into the key's estimate, which is then kept
 * at least until the lease would have expired. Unknown leases are ignored (release is idempotent);
 * a lease already expired is dropped without feeding the estimate (it was given up, as a renewal
 * would have found, and a store may already have pruned it). Returns whether the estimate was fed.
 */
export function releaseLease(
  policy: LeasePolicy,
  key: string,
  leaseId: string,
  nowMs: number,
  state: DecisionState,
): boolean {
  const set = state.getLeases(policy, key);
  const lease = set?.leases.get(leaseId);
  if (set === undefined || lease === undefined) return false;
  set.leases.delete(leaseId);
  if (lease.expiresMs <= nowMs) return false;
  set.releasedUntilMs = Math.max(set.releasedUntilMs ?? lease.expiresMs, lease.expiresMs);
  const heldMs = Math.max(0, nowMs - lease.acquiredMs);
  set.ewmaHoldMs =
    set.ewmaHoldMs === undefined
      ? heldMs
      : set.ewmaHoldMs + LEASE_EWMA_ALPHA * (heldMs - set.ewmaHoldMs);
  pruneLeases(set, nowMs);
  // Kept even when empty, so the key's observed hold time survives; stores drop spent sets lazily.
  state.putLeases(policy, key, set);
  return true;
}

/**
 * Extends a live lease by its policy's TTL from `nowMs`. Returns false when the lease is gone
 * (released, or expired as abandoned).
 */
export function renewLease(
  policy: LeasePolicy,
  key: string,
  leaseId: string,
  nowMs: number,
  state: DecisionState,
): boolean {
  const lease = state.getLeases(policy, key)?.leases.get(leaseId);
  if (lease === undefined || lease.expiresMs <= nowMs) return false;
  lease.expiresMs = nowMs + policy.leaseTtlMs;
  return true;
}

/**
 * The lease step of a decision for policy `p`, given the key's leases after pruning: ms until it
 * admits (0 = admits now). A full key waits for its position in line ({@link leaseDelayMs}); an
 * overload policy also refuses, for at least {@link LEASE_MIN_DELAY_MS} and twice the lag, while
 * the event-loop delay is above its threshold.
 */
export function leaseStepDelayMs(
  p: LeasePolicy,
  leases: LeaseSet | undefined,
  input: DecisionInput,
  nowMs: number,
): number {
  let delayMs = 0;
  const max = p.kind === 'concurrency' ? p.max : p.maxInFlight;
  if (leases !== undefined && leases.leases.size >= max) {
    delayMs = leaseDelayMs(leases, max, p.initialHoldEstimateMs, nowMs);
  }
  if (p.kind === 'overload') {
    const lag = input.eventLoopDelayMs;
    if (lag !== undefined && lag > p.maxEventLoopDelayMs) {
      delayMs = Math.max(delayMs, LEASE_MIN_DELAY_MS, Math.ceil(2 * lag));
    }
  }
  return delayMs;
}
