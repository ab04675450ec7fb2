/**
 * @module compiled-policy
 * The compiled forms of policies every store decides with, and the one constructor of compiled rate
 * policies (one shape for all).
 */

import type { A2AMethod } from './a2a-methods.js';
import type { Policy, RejectionKind, RequestIdentity } from './policy.js';

/** Fields every compiled policy shares. */
interface CompiledBase {
  /** Position in the compiled set; stable across stores (used in storage keys). */
  readonly index: number;
  /**
   * Row of these parameters in the Redis script's policy table: `index`, except for the
   * non-default tiers of a tiered rate policy (rows after the last policy).
   */
  readonly paramIndex: number;
  readonly name: string;
  /** Scope label for the wire. */
  readonly scopeName: string;
  /** Key names one caller: rate rejections may reserve. */
  readonly callerScoped: boolean;
  readonly rejectAs: RejectionKind;
  /** `mode: 'shadow'`: decided apart, after the enforced policies admitted; never refuses. */
  readonly shadow: boolean;
  readonly methods: ReadonlySet<A2AMethod>;
  /** The subject of a request under this policy (`caller:x`, `tenant:t`, `agent`), or undefined if it does not apply. */
  readonly subjectOf: (request: RequestIdentity) => string | undefined;
  /**
   * The key of a request in this policy's own table, the same in every store: distinct
   * identities give distinct keys (`table-key.ts`), allocation-free for the single-dimension
   * scopes (the caller name itself for `caller`). Undefined when `subjectOf` is.
   */
  readonly keyOf: (request: RequestIdentity) => string | undefined;
  readonly source: Policy;
}

/**
 * The deepest a usage budget goes into debt: ten years of its window's worth, µs past now. A
 * report beyond it (a runaway or hostile count) leaves the caller refused for ten years rather
 * than overflowing the timestamp; the Redis script's mode `g` caps with the same number.
 */
export const MAX_USAGE_DEBT_US = 315_360_000_000_000;

/**
 * A validated rate policy with its GCRA parameters in integer microseconds. The emission interval
 * is `ceil(windowSeconds · 10⁶ / limit)` µs: the one rounding rule shared by every store, so the
 * limit is never exceeded by rounding.
 *
 * @example
 * ```ts
 * const [p] = compilePolicies([{ name: 'r', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 }]).policies;
 * if (p?.kind === 'rate') p.emissionUs; // 1_000_000
 * ```
 */
export interface CompiledRatePolicy extends CompiledBase {
  readonly kind: 'rate';
  readonly limit: number;
  readonly windowSeconds: number;
  readonly burst: number;
  /** T, µs. */
  readonly emissionUs: number;
  /** τ = (burst − 1)·T, µs. */
  readonly toleranceUs: number;
  /** Window, µs. */
  readonly windowUs: number;
  /** The tier these limits are of (tiered policies only). */
  readonly tier: string | undefined;
  /** Every tier's variant, in declared order (empty when the policy is not tiered). */
  readonly tierVariants: readonly CompiledRatePolicy[];
  /**
   * Usage policies: the unit of `limit` and `burst`. Then `emissionUs` is what admission charges
   * (`estimate` · `unitUs`) and `toleranceUs` is set so that admission conforms exactly when the
   * budget holds at least `max(estimate, 1)` units.
   */
  readonly unit: string | undefined;
  /** µs of budget per unit, `ceil(windowSeconds · 10⁶ / limit)`; = `emissionUs` for request rates. */
  readonly unitUs: number;
  /**
   * The furthest ahead of now, µs, this policy itself ever puts a key's timestamp: a spent bucket
   * plus a window of held slots (`τ + T + window`); for a usage budget, its deepest debt plus one
   * admission's charge. A timestamp further ahead was written before the clock stepped back
   * (`clampSteppedBack`).
   */
  readonly maxAheadUs: number;
  /**
   * Where a timestamp past {@link maxAheadUs} is put back, µs ahead of now: a bucket spent at
   * this instant (`τ + T`, the next request in one emission interval); for a usage budget its
   * deepest debt.
   */
  readonly steppedBackAheadUs: number;
}

/**
 * A validated concurrency (or overload in-flight) policy.
 */
export interface CompiledConcurrencyPolicy extends CompiledBase {
  readonly kind: 'concurrency';
  readonly max: number;
  /** Lease TTL, ms. */
  readonly leaseTtlMs: number;
  /** Hold estimate before observations, ms. */
  readonly initialHoldEstimateMs: number;
  /**
   * How long leases of message methods are held, when the policy says (see
   * {@link ConcurrencyPolicy.holdUntil}); undefined: until the task ends.
   */
  readonly holdUntil: 'task' | 'response' | undefined;
  /**
   * Set on a caller's share of an overload policy (see {@link CompiledOverloadPolicy.callerShare}):
   * that policy's `maxInFlight`. Undefined for concurrency policies as written.
   */
  readonly shareOfInFlight: number | undefined;
}

/**
 * A validated overload policy. Its in-flight limit is kept as leases on the key `agent`.
 */
export interface CompiledOverloadPolicy extends CompiledBase {
  readonly kind: 'overload';
  /** In-flight cap; `Infinity` when not set. */
  readonly maxInFlight: number;
  /** Event-loop delay cap, ms; `Infinity` when not set. */
  readonly maxEventLoopDelayMs: number;
  readonly leaseTtlMs: number;
  readonly initialHoldEstimateMs: number;
  /**
   * A caller's share of `maxInFlight` (`maxInFlightPerCaller`), undefined when there is none: a
   * concurrency variant with the policy's index and name, scope `caller` (table keys
   * `caller:<caller>`, beside the key `agent` in the same table), its own `paramIndex` (script
   * row), leases held until the response ends, rejections as quota. Selected right after the
   * policy wherever the policy applies.
   */
  readonly callerShare: CompiledConcurrencyPolicy | undefined;
}

/**
 * Any compiled policy.
 */
export type CompiledPolicy =
  | CompiledRatePolicy
  | CompiledConcurrencyPolicy
  | CompiledOverloadPolicy;

/**
 * Hold options with defaults applied; grace and bounds in µs.
 */
export interface CompiledHoldOptions {
  readonly maxNoShows: number;
  readonly maxHoldsPerKey: number;
  readonly minGraceUs: number;
  readonly graceFraction: number;
}

/**
 * A validated policy set: the policies in declared order and, per method, those that apply.
 */
export interface CompiledPolicySet {
  /** The policies in declared order; a tiered rate policy as its default tier's variant. */
  readonly policies: readonly CompiledPolicy[];
  /** Every parameter row, by `paramIndex`: the policies, then the non-default tier variants. */
  readonly rows: readonly CompiledPolicy[];
  /** True when some rate policy has tiers. */
  readonly tiered: boolean;
  readonly holds: CompiledHoldOptions;
  /**
   * Policies that apply to `method`, in declared order, tiered ones as their `tier` variant
   * (precomputed; no allocation).
   */
  forMethod(method: A2AMethod, tier?: string): readonly CompiledPolicy[];
  /** The variant of policy `index` for `tier` (the policy itself when untiered). */
  atIndex(index: number, tier: string | undefined): CompiledPolicy | undefined;
  /** Indexes of the shadow policies of `method` (empty for most sets; precomputed). */
  shadowIndexes(method: A2AMethod): readonly number[];
}

/**
 * A compiled rate policy with its fields in one fixed order. Plain, usage and tier-variant rate
 * policies are all built here, so they share one hidden class and the decision's property reads
 * on them stay monomorphic (a set that mixed shapes made every decision of the process slower).
 */
export function compiledRatePolicy(
  r: Omit<CompiledRatePolicy, 'maxAheadUs' | 'steppedBackAheadUs'>,
): CompiledRatePolicy {
  const usage = r.unit !== undefined;
  return {
    kind: 'rate',
    index: r.index,
    paramIndex: r.paramIndex,
    name: r.name,
    scopeName: r.scopeName,
    callerScoped: r.callerScoped,
    rejectAs: r.rejectAs,
    shadow: r.shadow,
    methods: r.methods,
    subjectOf: r.subjectOf,
    keyOf: r.keyOf,
    source: r.source,
    limit: r.limit,
    windowSeconds: r.windowSeconds,
    burst: r.burst,
    emissionUs: r.emissionUs,
    toleranceUs: r.toleranceUs,
    windowUs: r.windowUs,
    tier: r.tier,
    tierVariants: r.tierVariants,
    unit: r.unit,
    unitUs: r.unitUs,
    maxAheadUs: usage
      ? MAX_USAGE_DEBT_US + r.toleranceUs + r.emissionUs + r.windowUs
      : r.toleranceUs + r.emissionUs + r.windowUs,
    steppedBackAheadUs: usage ? MAX_USAGE_DEBT_US : r.toleranceUs + r.emissionUs,
  };
}
