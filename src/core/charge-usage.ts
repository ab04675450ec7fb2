/**
 * @module charge-usage
 * Reported usage of a usage policy (tokens a task burned): charged to the budget after the fact,
 * possibly into debt. The same rule as the Redis script's mode `g`.
 */

import type { CompiledRatePolicy } from './compiled-policy.js';
import type { DecisionState } from './decision-state.js';

/**
 * Charges `units` of reported usage to a usage policy's key (`policy.keyOf` of the request that
 * used them): the budget's timestamp moves `units · unitUs` later from `max(tat, now)`, with no
 * conformance check — usage already happened, so the budget may go into debt, and the next
 * admission waits exactly until it holds a unit again. Every store charges with this rule.
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
  const tatUs = state.getTat(policy, k);
  const from = tatUs === undefined || tatUs < nowUs ? nowUs : tatUs;
  state.putRate(policy, k, from + units * policy.unitUs, state.getExtra(policy, k), nowUs);
}
