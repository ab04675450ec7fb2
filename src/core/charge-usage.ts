/**
 * @module charge-usage
 * Reported usage charged to a usage policy's budget after the fact, possibly into debt.
 */

import { type CompiledRatePolicy, MAX_USAGE_DEBT_US } from './compiled-policy.js';
import type { DecisionState } from './decision-state.js';
import { isSteppedBack } from './gcra.js';

/**
 * Charges `units` of reported usage to a usage policy's key (`policy.keyOf` of the request that
 * used them; negative to give back what a reservation held beyond the use, never past a full
 * budget): the budget's timestamp moves `units · unitUs` later from `max(tat, now)`, with no
 * conformance check — usage already happened, so the budget may go into debt, and the next
 * admission waits exactly until it holds a unit again (at most {@link MAX_USAGE_DEBT_US} ahead).
 * Every store charges with this rule.
 */
export function chargeUsage(
  policy: CompiledRatePolicy,
  key: string,
  units: number,
  nowMs: number,
  state: DecisionState,
): void {
  const nowUs = Math.floor(nowMs * 1000);
  const k = state.rateKey(policy, key, nowUs);
  const stored = state.getTat(policy, k);
  // Past the deepest debt: written before the clock stepped back (`isSteppedBack`).
  const tatUs = isSteppedBack(stored, nowUs, policy) ? nowUs + policy.steppedBackAheadUs : stored;
  const from = tatUs === undefined || tatUs < nowUs ? nowUs : tatUs;
  // Negative units (a reservation settled for less than it held) refund down to a full bucket.
  const tat = Math.max(Math.min(from + units * policy.unitUs, nowUs + MAX_USAGE_DEBT_US), nowUs);
  state.putRate(policy, k, tat, state.getExtra(policy, k), nowUs);
}
