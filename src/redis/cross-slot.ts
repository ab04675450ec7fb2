/**
 * @module cross-slot
 * The two-phase protocol that keeps a decision all-or-nothing across Redis Cluster slots.
 */

import type { DecisionInput } from '../core/decision-state.js';
import { limitStateOf, rejectingLimitState } from '../core/limit-state.js';
import type { Decision, LeaseRef, LimitState } from '../core/rejection.js';
import { rejectedDecision } from '../core/rejection-of.js';
import { type DecisionScript, SCRIPT_MODES } from './decision-script.js';
import type { RequestStep } from './redis-keys.js';
import type { RedisRooms } from './redis-rooms.js';
import { describeError, notify } from './redis-store-options.js';
import {
  readReserveReply,
  readStepsReply,
  readUndoReply,
  type StepsReply,
} from './script-replies.js';

/**
 * The arguments of one cross-slot decision.
 *
 * @internal
 */
export interface CrossSlotCall {
  readonly now: string;
  readonly holdKey: string;
  readonly lag: string;
  readonly leaseBase: string;
}

/** Phase-1 result of one slot group: its steps (indexes into the request's) and its reply. */
interface GroupTry {
  readonly steps: readonly number[];
  readonly reply: StepsReply;
}

function keysOf(steps: readonly RequestStep[], group: readonly number[]): string[] {
  return group.map((i) => (steps[i] as RequestStep).key);
}

function rowsOf(steps: readonly RequestStep[], group: readonly number[]): string[] {
  return group.map((i) => String((steps[i] as RequestStep).policy.paramIndex));
}

/**
 * Decides `steps` (more than one hash tag) with the two-phase protocol. Phase 1 decides every slot
 * group in parallel, groups that admit charging tentatively; if all admit, that is the admission.
 * Otherwise phase 2 refunds the tentative charges (timestamp − T, held slots put back, leases
 * dropped) and, when the policy that set the delay may reserve, reserves the slot in its group.
 * Between the phases other requests may see a tentative charge and wait slightly longer; nothing
 * is ever admitted beyond a limit. The delay of a rejection
 * comes from the group that held the latest conforming time (the earliest policy in declared
 * order on a tie, as in core). `script` is the one the decision started with.
 *
 * @internal
 */
export async function decideAcrossSlots(
  rooms: Pick<RedisRooms, 'runner' | 'failure' | 'logger'>,
  script: DecisionScript,
  input: DecisionInput,
  steps: readonly RequestStep[],
  call: CrossSlotCall,
): Promise<Decision> {
  const run = (keys: readonly string[], args: readonly string[]) =>
    rooms.runner.run(script, keys, args);
  const byTag = new Map<string, number[]>();
  steps.forEach((s, i) => {
    const group = byTag.get(s.tag);
    if (group === undefined) byTag.set(s.tag, [i]);
    else group.push(i);
  });
  const long = call.lag !== '' || call.leaseBase !== '';
  const settled = await Promise.allSettled(
    [...byTag.values()].map(async (group): Promise<GroupTry> => {
      const args = long
        ? [SCRIPT_MODES.tryGroupLong, call.now, call.holdKey, call.lag, call.leaseBase]
        : [SCRIPT_MODES.tryGroup, call.now, call.holdKey];
      const reply = await run(keysOf(steps, group), [...args, ...rowsOf(steps, group)]);
      return { steps: group, reply: readStepsReply(reply, group.length, 0, true) };
    }),
  );
  const tries: GroupTry[] = [];
  let failure: unknown;
  for (const r of settled) {
    if (r.status === 'fulfilled') tries.push(r.value);
    else failure ??= r.reason;
  }
  const admittedTries = tries.filter((t) => t.reply.admitted);
  const undoAll = () =>
    Promise.all(
      admittedTries.map(async (t) => {
        const undo = t.reply.admitted ? t.reply.undo : [];
        const reply = await run(keysOf(steps, t.steps), [
          SCRIPT_MODES.undo,
          call.now,
          call.holdKey,
          call.leaseBase,
          ...rowsOf(steps, t.steps),
          ...undo,
        ]);
        return { t, refunded: readUndoReply(reply, t.steps.length) };
      }),
    );
  if (failure !== undefined) {
    // Give back what the groups that did answer charged, then let the failure policy decide.
    void undoAll().catch(() => {});
    throw failure;
  }

  const stepNowUs: number[] = [];
  const stepTat: number[] = [];
  const record = (group: readonly number[], tats: readonly number[], nowUs: number) => {
    group.forEach((stepIndex, j) => {
      stepTat[stepIndex] = tats[j] as number;
      stepNowUs[stepIndex] = nowUs;
    });
  };
  for (const t of tries) record(t.steps, t.reply.tats, t.reply.nowUs);

  if (admittedTries.length === tries.length) {
    const limits: LimitState[] = [];
    // In step order, as one slot lists them: an overload policy's agent lease and its caller
    // share's have one policy index but live in two slots, so that index cannot order them.
    const byStep: (LeaseRef | undefined)[] = [];
    for (const t of tries) {
      t.steps.forEach((stepIndex, j) => {
        const s = steps[stepIndex] as RequestStep;
        if (s.takesLease) {
          byStep[stepIndex] = {
            policyIndex: s.policy.index,
            key: s.key,
            leaseId: `${call.leaseBase}.${j + 1}`,
          };
        }
      });
    }
    const leases = byStep.filter((l): l is LeaseRef => l !== undefined);
    steps.forEach((s, i) => {
      if (s.policy.kind === 'rate') {
        limits.push(limitStateOf(s.policy, stepTat[i] as number, stepNowUs[i] as number));
      }
    });
    return {
      admitted: true,
      limits,
      leases,
      claimedHold: tries.some((t) => t.reply.admitted && t.reply.claimedHold),
    };
  }

  let setterDelayUs = -1;
  let setterReserved: boolean | undefined;
  let setterStep = -1;
  for (const t of tries) {
    if (t.reply.admitted) continue;
    const stepIndex = t.steps[t.reply.setter] as number;
    if (
      setterStep < 0 ||
      t.reply.delayUs > setterDelayUs ||
      (t.reply.delayUs === setterDelayUs && stepIndex < setterStep)
    ) {
      setterDelayUs = t.reply.delayUs;
      setterReserved = t.reply.reserved;
      setterStep = stepIndex;
    }
  }
  const setter = steps[setterStep] as RequestStep;
  let delayUs = setterDelayUs;
  let reserved = setterReserved;
  const mayReserve =
    setter.policy.kind === 'rate' &&
    setter.policy.callerScoped &&
    call.holdKey !== '' &&
    setterReserved === false;
  const [undone, reservation] = await Promise.allSettled([
    undoAll(),
    mayReserve
      ? run(
          [setter.key],
          [SCRIPT_MODES.reserve, call.now, call.holdKey, String(setter.policy.paramIndex)],
        ).then(readReserveReply)
      : Promise.resolve(undefined),
  ]);
  if (undone.status === 'fulfilled') {
    for (const { t, refunded } of undone.value) record(t.steps, refunded.tats, refunded.nowUs);
  } else {
    rooms.failure.countError(undone.reason);
    notify(
      rooms.logger,
      'warn',
      'cross-slot refund failed; tentative charges stay until they expire',
      {
        error: describeError(undone.reason),
      },
    );
  }
  if (reservation.status === 'fulfilled' && reservation.value !== undefined) {
    if (reservation.value.reserved) {
      reserved = true;
      delayUs = reservation.value.delayUs;
    }
  } else if (reservation.status === 'rejected') {
    rooms.failure.countError(reservation.reason);
  }
  const limits: LimitState[] = [];
  steps.forEach((s, i) => {
    if (s.policy.kind !== 'rate') return;
    const tat = stepTat[i] as number;
    limits.push(
      i === setterStep
        ? rejectingLimitState(s.policy, delayUs)
        : limitStateOf(s.policy, tat < 0 ? undefined : tat, stepNowUs[i] as number),
    );
  });
  return rejectedDecision(setter, input, delayUs, reserved, limits);
}
