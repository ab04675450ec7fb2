/**
 * @module policy-tiers
 * Tiers of a rate policy (usage budgets included): one compiled variant per tier and the per-tier
 * selection.
 */

import type { A2AMethod } from './a2a-methods.js';
import {
  type CompiledPolicy,
  type CompiledRatePolicy,
  compiledRatePolicy,
} from './compiled-policy.js';

/** The GCRA parameters of one set of rate limits, µs. */
export interface RateParams {
  readonly limit: number;
  readonly windowSeconds: number;
  readonly burst: number;
  readonly emissionUs: number;
  readonly toleranceUs: number;
  readonly windowUs: number;
}

/**
 * What makes a rate policy a usage budget, as given: its unit and the units charged at admission.
 */
export interface UsageSource {
  readonly unit: unknown;
  readonly estimate: unknown;
}

/**
 * Unit names: lower-case letters, digits, `_` and `-`, 1–32 characters, starting with a letter
 * (they are written as `qu` in `RateLimit-Policy` and on the card).
 */
export const UNIT_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

/**
 * The GCRA parameters of a usage budget measured by `params`: admission charges `estimate` units
 * (`emissionUs`, µs) and conforms exactly while the budget holds at least `max(estimate, 1)`
 * units (`toleranceUs`, µs); `unitUs` is one unit's share of the window, µs.
 *
 * @example
 * ```ts
 * usageGcra(rateParams({ limit: 10_000, windowSeconds: 60 }, '') as RateParams, 0).unitUs; // 6000
 * ```
 */
export function usageGcra(
  params: RateParams,
  estimate: number | undefined,
): { readonly emissionUs: number; readonly toleranceUs: number; readonly unitUs: number } {
  const unitUs = params.emissionUs;
  if (estimate === undefined) {
    // No estimate: a task may use the whole budget, so admission reserves all of it (into debt
    // when the budget is partly spent) and admits while one unit is left; the task's report
    // settles the reservation. Tasks started together cannot overrun the budget by more than
    // one reservation.
    return { emissionUs: params.burst * unitUs, toleranceUs: params.toleranceUs, unitUs };
  }
  return {
    emissionUs: estimate * unitUs,
    toleranceUs: params.toleranceUs - Math.max(0, estimate - 1) * unitUs,
    unitUs,
  };
}

/**
 * The units a usage policy reserves at each admission (its `estimate`, or its whole burst when it
 * gives none); settled by the task's report.
 *
 * @example
 * ```ts
 * reservedUnitsOf(tokens); // 10_000 for { limit: 10_000, windowSeconds: 60 } with no estimate
 * ```
 */
export function reservedUnitsOf(p: {
  readonly emissionUs: number;
  readonly unitUs: number;
}): number {
  return Math.round(p.emissionUs / p.unitUs);
}

/** A wrong field of a set of rate limits: the field and what is wrong with it. */
export interface RateParamsProblem {
  readonly field: string;
  readonly problem: string;
}

/**
 * Tier names: lower-case letters, digits, `_` and `-`, 1–32 characters, starting with a letter or
 * digit (they appear in ErrorInfo metadata and on the card).
 */
export const TIER_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}

/**
 * Validates a limit, window and burst and computes their GCRA parameters: emission interval
 * `ceil(windowSeconds · 10⁶ / limit)` µs, tolerance `(burst − 1)` intervals. `prefix` goes before
 * the field name in a problem (e.g. `tiers.pro.`).
 *
 * @example
 * ```ts
 * rateParams({ limit: 60, windowSeconds: 60, burst: 10 }, ''); // { …, emissionUs: 1_000_000 }
 * ```
 */
export function rateParams(
  raw: { readonly limit?: unknown; readonly windowSeconds?: unknown; readonly burst?: unknown },
  prefix: string,
): RateParams | RateParamsProblem {
  const { limit, windowSeconds } = raw;
  if (!isPositiveInteger(limit)) {
    return { field: `${prefix}limit`, problem: `must be a positive integer, got ${show(limit)}` };
  }
  if (!isPositiveInteger(windowSeconds)) {
    return {
      field: `${prefix}windowSeconds`,
      problem: `must be a positive whole number of seconds, got ${show(windowSeconds)}`,
    };
  }
  const burst = raw.burst ?? limit;
  if (!isPositiveInteger(burst)) {
    return { field: `${prefix}burst`, problem: `must be an integer ≥ 1, got ${show(raw.burst)}` };
  }
  const windowUs = windowSeconds * 1_000_000;
  if (limit > windowUs) {
    return {
      field: `${prefix}limit`,
      problem: `must be at most 1,000,000 per second, got ${limit}`,
    };
  }
  const emissionUs = Math.ceil(windowUs / limit);
  return {
    limit,
    windowSeconds,
    burst,
    emissionUs,
    toleranceUs: (burst - 1) * emissionUs,
    windowUs,
  };
}

/**
 * Per tier name, the policies of every method: the variant of each tiered policy for that tier
 * (its default tier's when it does not list the tier), the untiered policies as they are.
 * Requests without a tier, or with a tier no policy lists, use `forMethod` unchanged.
 */
export function tierSelections(
  policies: readonly CompiledPolicy[],
  methods: readonly A2AMethod[],
  forMethod: (method: A2AMethod) => readonly CompiledPolicy[],
): ReadonlyMap<string, ReadonlyMap<A2AMethod, readonly CompiledPolicy[]>> {
  const names = new Set<string>();
  for (const p of policies) {
    if (p.kind === 'rate') for (const v of p.tierVariants) if (v.tier) names.add(v.tier);
  }
  const out = new Map<string, ReadonlyMap<A2AMethod, readonly CompiledPolicy[]>>();
  for (const tier of names) {
    const byMethod = new Map<A2AMethod, readonly CompiledPolicy[]>();
    for (const method of methods) {
      byMethod.set(
        method,
        forMethod(method).map((p) => variantFor(p, tier)),
      );
    }
    out.set(tier, byMethod);
  }
  return out;
}

/**
 * The variant of `p` for `tier`: itself when untiered, its default tier's when it does not list
 * `tier` (or `tier` is undefined).
 *
 * @example
 * ```ts
 * variantFor(perCaller, 'pro').burst; // 100
 * ```
 */
export function variantFor(p: CompiledPolicy, tier: string | undefined): CompiledPolicy {
  if (p.kind !== 'rate' || tier === undefined || p.tierVariants.length === 0) return p;
  for (const v of p.tierVariants) if (v.tier === tier) return v;
  return p;
}

/**
 * Tier variants of a compiled rate policy whose source lists `tiers`: one per tier, the default
 * tier's being `base` itself with its parameters replaced. Every variant keeps `base`'s index,
 * name and keys, so a caller keeps one bucket whatever its tier, and has its own GCRA parameters
 * and `paramIndex` (the row the Redis script reads; `nextRow` hands them out for the non-default
 * tiers). Returns the problem of the first bad field instead. With `usage` (the source gave `unit`
 * or `estimate`) every variant is a usage budget in that unit, and the estimate must fit every
 * tier's burst.
 *
 * @example
 * ```ts
 * compileTierVariants(base, { free: { limit: 60, windowSeconds: 60 } }, 'free', () => 9);
 * ```
 */
export function compileTierVariants(
  base: Omit<
    CompiledRatePolicy,
    | keyof RateParams
    | 'tier'
    | 'tierVariants'
    | 'unit'
    | 'unitUs'
    | 'maxAheadUs'
    | 'steppedBackAheadUs'
  >,
  tiers: unknown,
  defaultTier: unknown,
  nextRow: () => number,
  usage?: UsageSource,
):
  | { readonly policy: CompiledRatePolicy; readonly extraRows: CompiledRatePolicy[] }
  | RateParamsProblem {
  let unit: string | undefined;
  let estimate: number | undefined;
  if (usage !== undefined) {
    if (usage.unit === undefined) {
      return { field: 'estimate', problem: 'is for usage policies (give `unit`)' };
    }
    if (typeof usage.unit !== 'string' || !UNIT_NAME_PATTERN.test(usage.unit)) {
      return {
        field: 'unit',
        problem: `must match [a-z][a-z0-9_-]{0,31}, got ${show(usage.unit)}`,
      };
    }
    unit = usage.unit;
    const e = usage.estimate;
    if (e !== undefined && (typeof e !== 'number' || !Number.isSafeInteger(e) || e < 0)) {
      return { field: 'estimate', problem: `must be an integer ≥ 0, got ${show(usage.estimate)}` };
    }
    estimate = e as number | undefined;
  }
  if (typeof tiers !== 'object' || tiers === null || Array.isArray(tiers)) {
    return {
      field: 'tiers',
      problem: 'must be an object of tier name → { limit, windowSeconds, burst }',
    };
  }
  const entries = Object.entries(tiers as Record<string, unknown>);
  if (entries.length === 0) return { field: 'tiers', problem: 'must list at least one tier' };
  if (typeof defaultTier !== 'string' || !Object.hasOwn(tiers, defaultTier)) {
    return {
      field: 'defaultTier',
      problem: `must name one of the tiers (${entries.map(([n]) => n).join(', ')}), got ${show(defaultTier)}`,
    };
  }
  const variants: CompiledRatePolicy[] = [];
  const extraRows: CompiledRatePolicy[] = [];
  let policy: CompiledRatePolicy | undefined;
  for (const [tier, limits] of entries) {
    if (!TIER_NAME_PATTERN.test(tier)) {
      return { field: `tiers.${tier}`, problem: 'must be named by [a-z0-9][a-z0-9_-]{0,31}' };
    }
    if (typeof limits !== 'object' || limits === null) {
      return { field: `tiers.${tier}`, problem: 'must be { limit, windowSeconds, burst }' };
    }
    const params = rateParams(limits as Record<string, unknown>, `tiers.${tier}.`);
    if ('problem' in params) return params;
    if (estimate !== undefined && estimate > params.burst) {
      return {
        field: 'estimate',
        problem: `must be at most every tier's burst (tiers.${tier}: ${params.burst}), got ${estimate}`,
      };
    }
    const isDefault = tier === defaultTier;
    const variant = compiledRatePolicy({
      ...base,
      ...params,
      tier,
      paramIndex: isDefault ? base.paramIndex : nextRow(),
      tierVariants: variants,
      ...(unit === undefined
        ? { unit: undefined, unitUs: params.emissionUs }
        : // A budget is not a queue of slots: usage policies never hold.
          { callerScoped: false, unit, ...usageGcra(params, estimate) }),
    });
    variants.push(variant);
    if (isDefault) policy = variant;
    else extraRows.push(variant);
  }
  return { policy: policy as CompiledRatePolicy, extraRows };
}
