/**
 * @module limit-state
 * The `RateLimit` state (r, t) of a rate policy after a decision, as every store reports it for
 * the headers: from the key's timestamp, or r = 0 and t = the delay for the policy that rejected.
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
  // A usage policy's budget is counted in units: its admission charge (the estimate) is not one.
  const { burst } = p;
  let remaining = burst;
  let resetSeconds = 0;
  // A full bucket (no state, or a timestamp not after now) has `burst` left and nothing to reset.
  if (tatUs !== undefined && tatUs > nowUs) {
    const emissionUs = p.unit === undefined ? p.emissionUs : p.unitUs;
    const toleranceUs = p.unit === undefined ? p.toleranceUs : (burst - 1) * p.unitUs;
    remaining = remainingNow(tatUs, nowUs, emissionUs, toleranceUs, burst);
    const nextUs = nextGrowthUs(tatUs, nowUs, emissionUs, toleranceUs, burst, remaining);
    if (nextUs > 0) resetSeconds = Math.ceil(nextUs / 1_000_000);
  }
  const { name: policy, limit, windowSeconds, unit } = p;
  return unit === undefined
    ? { policy, limit, windowSeconds, remaining, resetSeconds }
    : { policy, limit, windowSeconds, remaining, resetSeconds, unit };
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
