/**
 * @module caller-share
 * A caller's fair share of an overload policy's `maxInFlight`: its default, its validation and its
 * concurrency variant.
 */

import type {
  CompiledConcurrencyPolicy,
  CompiledOverloadPolicy,
  CompiledPolicy,
} from './compiled-policy.js';
import type { RequestIdentity } from './policy.js';
import { describeValue, PolicyError } from './policy-error.js';
import { withExemptions } from './policy-scope.js';

/** Default share of `maxInFlight` one caller may hold (unitless fraction). */
export const DEFAULT_CALLER_SHARE_FRACTION = 0.1;

/** Smallest default share, requests in flight. */
export const DEFAULT_CALLER_SHARE_FLOOR = 10;

/**
 * The share one caller may hold of an overload policy's `maxInFlight`, or undefined for none:
 * `maxInFlightPerCaller` as given (`false`: none), else
 * `max(DEFAULT_CALLER_SHARE_FLOOR, ⌈maxInFlight · DEFAULT_CALLER_SHARE_FRACTION⌉)`; a share that
 * is not below `maxInFlight` binds nothing and is none.
 *
 * @example
 * ```ts
 * callerShareOf('agent-overload', 500, undefined); // 50
 * callerShareOf('agent-overload', 20, undefined); // 10
 * callerShareOf('agent-overload', 8, undefined); // undefined
 * ```
 */
export function callerShareOf(
  label: string,
  maxInFlight: number,
  given: unknown,
): number | undefined {
  if (given === false) return undefined;
  if (given !== undefined) {
    if (typeof given !== 'number' || !Number.isSafeInteger(given) || given <= 0) {
      throw new PolicyError(
        label,
        'maxInFlightPerCaller',
        `must be a positive integer or false, got ${describeValue(given)}`,
      );
    }
    if (!Number.isFinite(maxInFlight)) {
      throw new PolicyError(label, 'maxInFlightPerCaller', 'needs maxInFlight');
    }
    return given < maxInFlight ? given : undefined;
  }
  if (!Number.isFinite(maxInFlight)) return undefined;
  const share = Math.max(
    DEFAULT_CALLER_SHARE_FLOOR,
    Math.ceil(maxInFlight * DEFAULT_CALLER_SHARE_FRACTION),
  );
  return share < maxInFlight ? share : undefined;
}

/** Table key (and subject) of a caller's share: never `agent`, the overload policy's own key. */
const shareKey = (r: RequestIdentity): string | undefined => `caller:${r.caller}`;

/**
 * The caller-share variant of `overload` with share `max`: a concurrency policy of the same index
 * and name, scope `caller`, leases until the response ends, rejections as quota, script row
 * `paramIndex`.
 */
export function callerShareVariant(
  overload: Omit<CompiledOverloadPolicy, 'callerShare'>,
  max: number,
  paramIndex: number,
): CompiledConcurrencyPolicy {
  const scoped = withExemptions(overload.name, overload.source.exempt, {
    scopeName: 'caller',
    callerScoped: true,
    subjectOf: shareKey,
    keyOf: shareKey,
  });
  return {
    kind: 'concurrency',
    index: overload.index,
    paramIndex,
    shadow: overload.shadow,
    name: overload.name,
    ...scoped,
    rejectAs: 'quota',
    methods: overload.methods,
    source: overload.source,
    max,
    leaseTtlMs: overload.leaseTtlMs,
    initialHoldEstimateMs: overload.initialHoldEstimateMs,
    holdUntil: 'response',
    shareOfInFlight: overload.maxInFlight,
  };
}

/**
 * `list` with each overload policy's caller share right after it (the list itself when none has
 * one): the selection a decision applies.
 */
export function withCallerShares(list: readonly CompiledPolicy[]): readonly CompiledPolicy[] {
  if (!list.some((p) => p.kind === 'overload' && p.callerShare !== undefined)) return list;
  const out: CompiledPolicy[] = [];
  for (const p of list) {
    out.push(p);
    if (p.kind === 'overload' && p.callerShare !== undefined) out.push(p.callerShare);
  }
  return out;
}
