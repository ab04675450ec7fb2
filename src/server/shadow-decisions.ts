/**
 * @module shadow-decisions
 * Shadow (`mode: 'shadow'`) policies: decided apart, only for admitted requests, never refusing; a
 * would-be refusal goes to the observer and a log.
 */

import type { Clock } from '../core/clock.js';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { DecisionInput } from '../core/decision-state.js';
import type { Decision } from '../core/rejection.js';
import type { AdmissionRequest, LimiterObserver } from './limiter-options.js';
import { ShadowLog } from './shadow-log.js';

/**
 * The shadow side of one limiter: shadow policies are decided only for requests the enforced
 * ones admitted, without a messageId (a dry run holds no slot), all-or-nothing among themselves.
 *
 * @example
 * ```ts
 * const shadowInput = shadow.inputOf(input, limiter.policySet);
 * if (shadowInput !== undefined) decision = shadow.merge(request, decision, store.decideSync(shadowInput));
 * ```
 */
export class ShadowDecisions {
  private readonly log: ShadowLog | undefined;

  constructor(
    private readonly observer: LimiterObserver | undefined,
    private readonly clock: Clock,
    line: false | ((line: string) => void) | undefined,
  ) {
    this.log = line === false ? undefined : new ShadowLog(line ?? ((l) => console.warn(l)));
  }

  /** The shadow decision's input for an admitted `input`, or undefined when none applies. */
  inputOf(input: DecisionInput, set: CompiledPolicySet): DecisionInput | undefined {
    if (input.policyIndexes !== undefined) return undefined;
    const policyIndexes = set.shadowIndexes(input.method);
    if (policyIndexes.length === 0) return undefined;
    return {
      caller: input.caller,
      method: input.method,
      tenant: input.tenant,
      skill: input.skill,
      tier: input.tier,
      eventLoopDelayMs: input.eventLoopDelayMs,
      policyIndexes,
    };
  }

  /** The enforced decision with the shadow one's outcome: reported, or its leases added. */
  merge(request: AdmissionRequest, decision: Decision, shadow: Decision): Decision {
    if (!shadow.admitted) {
      this.observer?.shadowRejected?.(request, shadow.rejection);
      this.log?.refused(shadow.rejection, this.clock.nowMs());
      return decision;
    }
    if (!decision.admitted || shadow.leases.length === 0) return decision;
    return { ...decision, leases: [...decision.leases, ...shadow.leases] };
  }
}
