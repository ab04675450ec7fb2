/**
 * @module limit-state
 * The `RateLimit` states (r, t) a decision reports for its rate policies, `qu` for usage policies.
 */

import type { CompiledRatePolicy } from './compiled-policy.js';
import { nextGrowthUs, remainingNow } from './gcra.js';
import { type LimitState, retryAfterMsOf, wireDelaySeconds } from './rejection.js';

/**
 * The `RateLimit` state (r, t) of a rate policy whose key holds `tatUs` at `nowUs`.
 *
 * @example
 * ```ts
 * limitStateOf(policy, undefined, nowUs); // full bucket: remaining = burst, resetSeconds 0
 * ```
 */
export function limitStateOf(
  p: CompiledRatePolicy,
  tatUs: number | undefined,
  nowUs: number,
): LimitState {
  // Usage policies have a function of their own, so the usual case reads no unit fields twice and
  // builds one object shape (`bench:decide`).
  if (p.unit !== undefined) return usageLimitStateOf(p, p.unit, tatUs, nowUs);
  const { burst } = p;
  // A full bucket (no state, or a timestamp not after now) has `burst` left and nothing to reset.
  if (tatUs === undefined || tatUs <= nowUs) {
    return {
      policy: p.name,
      limit: p.limit,
      windowSeconds: p.windowSeconds,
      remaining: burst,
      resetSeconds: 0,
    };
  }
  const { emissionUs, toleranceUs } = p;
  const remaining = remainingNow(tatUs, nowUs, emissionUs, toleranceUs, burst);
  const nextUs = nextGrowthUs(tatUs, nowUs, emissionUs, toleranceUs, burst, remaining);
  return {
    policy: p.name,
    limit: p.limit,
    windowSeconds: p.windowSeconds,
    remaining,
    resetSeconds: nextUs > 0 ? Math.ceil(nextUs / 1_000_000) : 0,
  };
}

/**
 * {@link limitStateOf} of a usage policy: its budget is counted in units (`unitUs` each), so its
 * admission charge (the estimate) is not one.
 */
function usageLimitStateOf(
  p: CompiledRatePolicy,
  unit: string,
  tatUs: number | undefined,
  nowUs: number,
): LimitState {
  const { name: policy, limit, windowSeconds, burst, unitUs } = p;
  if (tatUs === undefined || tatUs <= nowUs) {
    return { policy, limit, windowSeconds, remaining: burst, resetSeconds: 0, unit };
  }
  const toleranceUs = (burst - 1) * unitUs;
  const remaining = remainingNow(tatUs, nowUs, unitUs, toleranceUs, burst);
  const nextUs = nextGrowthUs(tatUs, nowUs, unitUs, toleranceUs, burst, remaining);
  const resetSeconds = nextUs > 0 ? Math.ceil(nextUs / 1_000_000) : 0;
  return { policy, limit, windowSeconds, remaining, resetSeconds, unit };
}

/**
 * The `RateLimit` state of the policy that rejected a request: r = 0 and t = the delay in whole
 * wire seconds.
 *
 * @example
 * ```ts
 * rejectingLimitState(policy, 12_000_000).resetSeconds; // 12
 * ```
 */
export function rejectingLimitState(p: CompiledRatePolicy, delayUs: number): LimitState {
  const resetSeconds = wireDelaySeconds(retryAfterMsOf(delayUs));
  const { name: policy, limit, windowSeconds, unit } = p;
  return unit === undefined
    ? { policy, limit, windowSeconds, remaining: 0, resetSeconds }
    : { policy, limit, windowSeconds, remaining: 0, resetSeconds, unit };
}
