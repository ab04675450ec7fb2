/**
 * @module policies-of
 * Which policies a decision applies: one selection function for every store.
 */

import type { CompiledPolicy, CompiledPolicySet } from './compiled-policy.js';
import type { DecisionInput } from './decision-state.js';

/**
 * The policies a decision applies: `input.policyIndexes` when given, else those of the method;
 * tiered rate policies as the variant of `input.tier`. Every store selects with this function.
 */
export function policiesOf(
  policySet: CompiledPolicySet,
  input: DecisionInput,
): readonly CompiledPolicy[] {
  const indexes = input.policyIndexes;
  return indexes === undefined
    ? policySet.forMethod(input.method, input.tier)
    : policiesAt(policySet, indexes, input.tier);
}

/**
 * The policies at `indexes` (as variants of `tier`): a function of its own so the usual selection
 * by method stays small enough for engines to inline into every decision.
 */
function policiesAt(
  policySet: CompiledPolicySet,
  indexes: readonly number[],
  tier: string | undefined,
): readonly CompiledPolicy[] {
  const out: CompiledPolicy[] = [];
  for (const i of indexes) {
    const p = policySet.atIndex(i, tier);
    if (p === undefined) continue;
    out.push(p);
    // A caller's share of an overload policy applies wherever the policy does.
    if (p.kind === 'overload' && p.callerShare !== undefined) out.push(p.callerShare);
  }
  return out;
}
