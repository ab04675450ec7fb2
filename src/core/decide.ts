/**
 * @module decide
 * The admission decision over every policy that applies to a request: two phases, all-or-nothing,
 * the one-rate-policy fast path. Pure.
 */

import type { CompiledPolicy, CompiledPolicySet, CompiledRatePolicy } from './compiled-policy.js';
import {
  type DecisionInput,
  type DecisionState,
  type Hold,
  type Lease,
  type LeaseSet,
  OVERFLOW_KEY,
  type RateExtra,
} from './decision-state.js';
import { chargeTatUs, conformDelayUs, isSteppedBack } from './gcra.js';
import { isSpentLeaseSet, leaseStepDelayMs, pruneLeases } from './lease-step.js';
import { limitStateOf, rejectingLimitState } from './limit-state.js';
import { policiesOf } from './policies-of.js';
import { graceUs, holdKeyOf, isEmptyExtra, reservableSlotUs, settleExtra } from './rate-holds.js';
import type { Decision, LeaseRef, LimitState } from './rejection.js';
import { rejectedDecision } from './rejection-of.js';

/**
 * Evaluation of one policy for one request (phase 1). Steps are pooled and overwritten by each
 * decision (decisions are synchronous and never nested), so the general path allocates none.
 * The pool stays because `bench:decide` shows it pays (`docs/architecture.md`); one conforming
 * rate policy needs no step.
 */
interface Step {
  policy: CompiledPolicy;
  /** Key in the policy's table (see `CompiledPolicy.keyOf`). */
  key: string;
  /** Rate: timestamp after lazy refunds (undefined = full bucket). */
  tatUs: number | undefined;
  extra: RateExtra | undefined;
  /** Rate: this request's hold key, when it may hold or claim. */
  holdKey: string | undefined;
  /** Rate: caller-scoped and not the overflow bucket, so this request may hold a slot. */
  mayHold: boolean;
  /** Rate: the request's own hold in this policy, if any. */
  hold: Hold | undefined;
  /** Leases: the key's set after pruning. */
  leases: LeaseSet | undefined;
  /** µs until this policy admits (0 = admits now). */
  delayUs: number;
  /** Rate state needs writing back even on rejection (refunds happened). */
  dirty: boolean;
}

const STEP_POOL: Step[] = [];

function newStep(index: number): Step {
  const step: Step = {
    policy: undefined as unknown as CompiledPolicy,
    key: '',
    tatUs: undefined,
    extra: undefined,
    holdKey: undefined,
    mayHold: false,
    hold: undefined,
    leases: undefined,
    delayUs: 0,
    dirty: false,
  };
  STEP_POOL[index] = step;
  return step;
}

/** Fills `step` for policy `p`; false when the policy does not apply to this request. */
function evaluate(
  step: Step,
  p: CompiledPolicy,
  input: DecisionInput,
  nowMs: number,
  nowUs: number,
  state: DecisionState,
): boolean {
  const tableKey = p.keyOf(input);
  if (tableKey === undefined) return false;
  if (p.kind === 'rate') {
    const key = state.rateKey(p, tableKey, nowUs);
    fillRateStep(step, p, input, key, state.getTat(p, key), state.getExtra(p, key), nowUs);
    return true;
  }
  const leases = pruneLeases(state.getLeases(p, tableKey), nowMs);
  const delayMs = leaseStepDelayMs(p, leases, input, nowMs);
  step.policy = p;
  step.key = tableKey;
  step.tatUs = undefined;
  step.extra = undefined;
  step.holdKey = undefined;
  step.mayHold = false;
  step.hold = undefined;
  step.leases = leases;
  step.delayUs = delayMs * 1000;
  step.dirty = false;
  return true;
}

/** Fills `step` for rate policy `p` from its key's state as read from the store. */
function fillRateStep(
  step: Step,
  p: CompiledRatePolicy,
  input: DecisionInput,
  key: string,
  storedTatUs: number | undefined,
  extra: RateExtra | undefined,
  nowUs: number,
): void {
  if (isSteppedBack(storedTatUs, nowUs, p)) {
    // A timestamp further ahead than this policy ever writes one: the clock stepped back since.
    // The key is read as a bucket spent now, its holds and no-shows (just as far off) dropped,
    // and written back so.
    fillRateStepOf(step, p, input, key, nowUs + p.steppedBackAheadUs, undefined, nowUs);
    step.dirty = true;
    return;
  }
  fillRateStepOf(step, p, input, key, storedTatUs, extra, nowUs);
}

/** {@link fillRateStep} of a state the policy itself wrote. */
function fillRateStepOf(
  step: Step,
  p: CompiledRatePolicy,
  input: DecisionInput,
  key: string,
  storedTatUs: number | undefined,
  extra: RateExtra | undefined,
  nowUs: number,
): void {
  // Settling holds may refund or empty the extra state: such a key is written back either way.
  const tatUs = extra === undefined ? storedTatUs : settleExtra(extra, storedTatUs, nowUs, p);
  // The hold key is built only where a hold can exist (the key has holds) or be made (below).
  const mayHold = p.callerScoped && key !== OVERFLOW_KEY;
  const holdKey = mayHold && extra !== undefined ? holdKeyOf(input) : undefined;
  const hold = holdKey === undefined ? undefined : extra?.holds.get(holdKey);
  step.policy = p;
  step.key = key;
  step.tatUs = tatUs;
  step.extra = extra;
  step.holdKey = holdKey;
  step.mayHold = mayHold;
  step.hold = hold;
  step.leases = undefined;
  step.delayUs =
    hold === undefined ? conformDelayUs(tatUs, nowUs, p) : Math.max(0, hold.slotUs - nowUs);
  step.dirty = extra !== undefined;
}

/**
 * Decides one request against every policy of `policySet` that applies to its method, at `nowMs`.
 * Admitted: every rate policy is charged (or a held slot claimed) and every lease taken. Rejected:
 * nothing is charged, except that a caller-scoped rate policy which set the delay reserves this
 * request's slot when it carries a messageId.
 *
 * @example
 * ```ts
 * const set = compilePolicies([{ name: 'per-caller', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 }]);
 * const d = decide(set, { caller: 'a', method: 'SendMessage', messageId: 'm1' }, 0, tables);
 * if (!d.admitted) d.rejection.retryAfterMs; // exact ms until this request conforms
 * ```
 */
export function decide(
  policySet: CompiledPolicySet,
  input: DecisionInput,
  nowMs: number,
  state: DecisionState,
): Decision {
  const nowUs = Math.floor(nowMs * 1000);
  const policies = policiesOf(policySet, input);
  const only = policies.length === 1 ? policies[0] : undefined;
  // Kept small so engines inline it into the store's call: the loop is a function of its own.
  return only !== undefined && only.kind === 'rate'
    ? decideOneRate(only, policySet, input, nowMs, nowUs, state)
    : decideAll(policies, policySet, input, nowMs, nowUs, state);
}

/** Phase 1 over every policy of the request, then {@link finish}. */
function decideAll(
  policies: readonly CompiledPolicy[],
  policySet: CompiledPolicySet,
  input: DecisionInput,
  nowMs: number,
  nowUs: number,
  state: DecisionState,
): Decision {
  let count = 0;
  let rateCount = 0;
  let setter: Step | undefined;
  for (const p of policies) {
    const step = STEP_POOL[count] ?? newStep(count);
    if (!evaluate(step, p, input, nowMs, nowUs, state)) continue;
    count++;
    if (p.kind === 'rate') rateCount++;
    if (step.delayUs > 0 && (setter === undefined || step.delayUs > setter.delayUs)) setter = step;
  }
  return finish(policySet, input, count, rateCount, setter, nowMs, nowUs, state);
}

/**
 * The decision under one rate policy (the usual set for a method): a key with no holds whose
 * request conforms is charged and admitted right here; any other case is filled into the first
 * step and finished by the general path, so holds, reservations and rejections have one home.
 */
function decideOneRate(
  p: CompiledRatePolicy,
  policySet: CompiledPolicySet,
  input: DecisionInput,
  nowMs: number,
  nowUs: number,
  state: DecisionState,
): Decision {
  const tableKey = p.keyOf(input);
  if (tableKey === undefined) return finish(policySet, input, 0, 0, undefined, nowMs, nowUs, state);
  const key = state.rateKey(p, tableKey, nowUs);
  const tatUs = state.getTat(p, key);
  const extra = state.getExtra(p, key);
  if (extra === undefined && conformDelayUs(tatUs, nowUs, p) === 0) {
    const charged = chargeTatUs(tatUs, nowUs, p);
    state.putRate(p, key, charged, undefined, nowUs);
    return {
      admitted: true,
      limits: [limitStateOf(p, charged, nowUs)],
      leases: NO_LEASES,
      claimedHold: false,
    };
  }
  return finishOneRate(p, policySet, input, key, tatUs, extra, nowMs, nowUs, state);
}

/**
 * {@link decideOneRate} for a key with holds or a request that does not conform: through the first
 * step and the general path. A function of its own so the admitted path stays small enough for
 * engines to inline into the store's call.
 */
function finishOneRate(
  p: CompiledRatePolicy,
  policySet: CompiledPolicySet,
  input: DecisionInput,
  key: string,
  tatUs: number | undefined,
  extra: RateExtra | undefined,
  nowMs: number,
  nowUs: number,
  state: DecisionState,
): Decision {
  const step = STEP_POOL[0] ?? newStep(0);
  fillRateStep(step, p, input, key, tatUs, extra, nowUs);
  return finish(policySet, input, 1, 1, step.delayUs > 0 ? step : undefined, nowMs, nowUs, state);
}

/** Phase 2 over the `count` evaluated steps: admit, or reject with `setter`'s delay. */
function finish(
  policySet: CompiledPolicySet,
  input: DecisionInput,
  count: number,
  rateCount: number,
  setter: Step | undefined,
  nowMs: number,
  nowUs: number,
  state: DecisionState,
): Decision {
  if (setter === undefined) return admit(count, rateCount, nowMs, nowUs, state);

  // Rejected: write back lazy refunds; reserve in the setter if allowed.
  let reserved: boolean | undefined;
  if (setter.policy.kind === 'rate') {
    if (setter.hold !== undefined) {
      reserved = true;
    } else {
      if (setter.holdKey === undefined && setter.mayHold) setter.holdKey = holdKeyOf(input);
      const slotUs = reservableSlotUs(setter, nowUs, policySet.holds);
      reserved = slotUs !== undefined;
      if (slotUs !== undefined && setter.holdKey !== undefined) {
        const p = setter.policy;
        const extra = setter.extra ?? {
          holds: new Map<string, Hold>(),
          nextExpiryUs: Number.POSITIVE_INFINITY,
          noShows: 0,
          noShowsAtUs: nowUs,
        };
        const expiresUs = slotUs + graceUs(setter.delayUs, policySet.holds);
        extra.holds.set(setter.holdKey, { slotUs, expiresUs });
        if (expiresUs < extra.nextExpiryUs) extra.nextExpiryUs = expiresUs;
        setter.extra = extra;
        setter.tatUs = chargeTatUs(setter.tatUs, nowUs, p);
        setter.dirty = true;
      }
    }
  }
  const limits = limitsArray(rateCount);
  let j = 0;
  for (let i = 0; i < count; i++) {
    const step = STEP_POOL[i] as Step;
    const p = step.policy;
    if (p.kind !== 'rate') continue;
    if (step.dirty) {
      state.putRate(
        p,
        step.key,
        step.tatUs ?? nowUs,
        isEmptyExtra(step.extra) ? undefined : step.extra,
        nowUs,
      );
    }
    limits[j++] =
      step === setter ? rejectingLimitState(p, step.delayUs) : limitStateOf(p, step.tatUs, nowUs);
  }
  return rejectedDecision(setter, input, setter.delayUs, reserved, limits);
}

/** The leases of an admission that took none (most: rate policies only). Frozen, shared. */
const NO_LEASES: readonly LeaseRef[] = Object.freeze([]);

/**
 * An array for exactly `length` rate states (filled by index): `[]` grown by `push` would
 * allocate room for 17 on the first push, more than the decision's other values together.
 */
function limitsArray(length: number): LimitState[] {
  return length === 1 ? [NO_STATE] : new Array<LimitState>(length);
}

/** Placeholder of {@link limitsArray}'s one-element array, always overwritten. */
const NO_STATE = undefined as unknown as LimitState;

function admit(
  count: number,
  rateCount: number,
  nowMs: number,
  nowUs: number,
  state: DecisionState,
): Decision {
  let leases: LeaseRef[] | undefined;
  let claimedHold = false;
  const limits = limitsArray(rateCount);
  let j = 0;
  for (let i = 0; i < count; i++) {
    const step = STEP_POOL[i] as Step;
    const p = step.policy;
    if (p.kind === 'rate') {
      if (step.hold !== undefined && step.holdKey !== undefined && step.extra !== undefined) {
        step.extra.holds.delete(step.holdKey);
        if (step.extra.noShows > 0) step.extra.noShows -= 1;
        claimedHold = true;
      } else {
        step.tatUs = chargeTatUs(step.tatUs, nowUs, p);
      }
      state.putRate(
        p,
        step.key,
        step.tatUs ?? nowUs,
        isEmptyExtra(step.extra) ? undefined : step.extra,
        nowUs,
      );
      limits[j++] = limitStateOf(p, step.tatUs, nowUs);
    } else if (p.kind === 'concurrency' || Number.isFinite(p.maxInFlight)) {
      const set = step.leases ?? { leases: new Map<string, Lease>(), ewmaHoldMs: undefined };
      if (isSpentLeaseSet(set, nowMs)) {
        // A key whose estimate is forgotten starts over, whether or not its store dropped it.
        set.ewmaHoldMs = undefined;
        set.releasedUntilMs = undefined;
      }
      const leaseId = state.nextLeaseId();
      set.leases.set(leaseId, { acquiredMs: nowMs, expiresMs: nowMs + p.leaseTtlMs });
      state.putLeases(p, step.key, set);
      const ref = { policyIndex: p.index, key: step.key, leaseId };
      if (leases === undefined) leases = [ref];
      else leases.push(ref);
    }
  }
  return { admitted: true, limits, leases: leases ?? NO_LEASES, claimedHold };
}
