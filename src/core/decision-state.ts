/**
 * @module decision-state
 * The contract between the pure decision and a store (`DecisionState`), its hold and lease records,
 * the decision's input, and the shared overflow key.
 */

import type {
  CompiledConcurrencyPolicy,
  CompiledOverloadPolicy,
  CompiledRatePolicy,
} from './compiled-policy.js';
import type { RequestIdentity } from './policy.js';

/**
 * A slot held for one (policy key, caller, messageId): claimable in `[slotUs, expiresUs]`.
 */
export interface Hold {
  /** When the retry conforms, µs. */
  readonly slotUs: number;
  /** Slot + grace, µs; unclaimed past this, the hold is refunded. */
  readonly expiresUs: number;
}

/**
 * What a rate key keeps besides its timestamp, only while it has holds or no-shows.
 */
export interface RateExtra {
  /** Holds by (caller, messageId) (`holdKeyOf`). */
  holds: Map<string, Hold>;
  /** Earliest `expiresUs` among holds (a lower bound), µs; expiry is only scanned past it. */
  nextExpiryUs: number;
  /** Unclaimed expirations, decayed one per window. */
  noShows: number;
  /** Time the no-show decay last advanced, µs. */
  noShowsAtUs: number;
}

/**
 * One concurrency lease.
 */
export interface Lease {
  /** When admitted, ms. */
  readonly acquiredMs: number;
  /** Freed as abandoned past this unless renewed, ms. */
  expiresMs: number;
}

/**
 * The leases of one concurrency key and its observed hold time.
 */
export interface LeaseSet {
  leases: Map<string, Lease>;
  /** Exponentially weighted mean of observed hold times, ms. */
  ewmaHoldMs: number | undefined;
  /**
   * The latest expiry a released lease of this key had, ms (undefined: none). The hold-time
   * estimate is kept while a lease is live or until then; past it, with no lease live, the key
   * holds nothing a decision reads (`isSpentLeaseSet`) and a store may drop it.
   */
  releasedUntilMs?: number | undefined;
}

/**
 * A concurrency-like policy (concurrency, or overload with an in-flight cap).
 */
export type LeasePolicy = CompiledConcurrencyPolicy | CompiledOverloadPolicy;

/**
 * The key a store returns for a subject it can neither keep nor give a key of its own (the
 * in-process store at `maxKeys` when every key it could evict holds slots): a bucket shared by
 * such subjects, limited together, never holding slots. A reserved key (`reservedKey('overflow')`,
 * written as a literal so that the engine interns it: the decision compares every key with it):
 * no request's table key is ever this one. Evicted keys' states go to hashed
 * overflow buckets instead (see `MemoryStore`).
 *
 * @example
 * ```ts
 * state.rateKey(policy, 'caller:new', nowUs) === OVERFLOW_KEY; // table full
 * ```
 */
export const OVERFLOW_KEY = '#sha256:(overflow).................................';

/**
 * The state a decision reads and writes. Stores implement it over their own tables; the decision
 * calls it synchronously, so one call of {@link decide} is atomic for an in-process store.
 */
export interface DecisionState {
  /** The storage key for `key` (from `policy.keyOf`), or {@link OVERFLOW_KEY} when the table is full. */
  rateKey(policy: CompiledRatePolicy, key: string, nowUs: number): string;
  /** `tatUs` of a key, or undefined for a key with no state (full bucket). */
  getTat(policy: CompiledRatePolicy, key: string): number | undefined;
  /** Holds and no-shows of a key, if any. */
  getExtra(policy: CompiledRatePolicy, key: string): RateExtra | undefined;
  /** Writes a key back; the store may drop it when `tatUs <= nowUs` and `extra` is undefined. */
  putRate(
    policy: CompiledRatePolicy,
    key: string,
    tatUs: number,
    extra: RateExtra | undefined,
    nowUs: number,
  ): void;
  /** Leases of a key, if any. */
  getLeases(policy: LeasePolicy, key: string): LeaseSet | undefined;
  /** Writes leases back; undefined drops the key. */
  putLeases(policy: LeasePolicy, key: string, set: LeaseSet | undefined): void;
  /** A fresh, unique lease id. */
  nextLeaseId(): string;
}

/**
 * A request as the decision sees it: identity plus live signals from the server layer.
 */
export interface DecisionInput extends RequestIdentity {
  /** Current event-loop delay, ms (for overload policies with `maxEventLoopDelayMs`). */
  readonly eventLoopDelayMs?: number | undefined;
  /**
   * Decide under exactly these policies of the set (indexes into `policies`, in set order)
   * instead of those of `method`: a resubscription made of a duplicate stream is decided under
   * SubscribeToTask's policies and the stream limits of SendStreamingMessage. Indexes, not
   * compiled policies, so a store deciding with its own compilation of the same set (the Redis
   * store's insurance limiter) picks the same ones.
   */
  readonly policyIndexes?: readonly number[] | undefined;
}
