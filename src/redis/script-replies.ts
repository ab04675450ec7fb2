/**
 * @module script-replies
 * Typed decoders of the decision script's replies, and the `Decision` a decision reply means.
 */

import type { DecisionInput } from '../core/decision-state.js';
import { limitStateOf, rejectingLimitState } from '../core/limit-state.js';
import type { Decision, LeaseRef, LimitState } from '../core/rejection.js';
import { rejectedDecision } from '../core/rejection-of.js';
import type { MessageRecord } from '../store/message-records.js';
import type { RequestStep } from './redis-keys.js';

function unexpected(reply: unknown): Error {
  return new Error(`a2a-ratelimit: unexpected script reply ${String(reply)}`);
}

/** `reply` as an array, or the error of an unexpected reply. */
function arrayOf(reply: unknown): readonly unknown[] {
  if (!Array.isArray(reply)) throw unexpected(reply);
  return reply;
}

/** The integer at `reply[i]`, or the error of an unexpected reply. */
function int(reply: readonly unknown[], i: number): number {
  const v = reply[i];
  if (typeof v !== 'number') throw unexpected(v);
  return v;
}

function ints(reply: readonly unknown[], from: number, count: number): number[] {
  const out = new Array<number>(count);
  for (let i = 0; i < count; i++) out[i] = int(reply, from + i);
  return out;
}

/**
 * The reply of a decision over one slot's `n` steps (modes `d`, `t`, one entry of `b`).
 *
 * @internal
 */
export type StepsReply =
  | {
      readonly admitted: true;
      /** The script's time, µs. */
      readonly nowUs: number;
      /** A held slot was claimed. */
      readonly claimedHold: boolean;
      /** Per step: its new TAT, µs (0 for lease steps). */
      readonly tats: readonly number[];
      /** Mode `t` only: per step, the code that gives its charge back. */
      readonly undo: readonly string[];
    }
  | {
      readonly admitted: false;
      readonly nowUs: number;
      /** The step (0-based) that set the delay. */
      readonly setter: number;
      /** Until the request conforms, µs. */
      readonly delayUs: number;
      /** Whether a slot is held for the request; undefined when the setter cannot reserve. */
      readonly reserved: boolean | undefined;
      /** Per step: its TAT, µs (−1 = none; 0 for lease steps). */
      readonly tats: readonly number[];
    };

const NO_UNDO: readonly string[] = Object.freeze([]);

/**
 * Decodes a decision reply of `n` steps starting at `reply[offset]`; `withUndo` for mode `t`.
 *
 * @internal
 */
export function readStepsReply(
  reply: unknown,
  n: number,
  offset = 0,
  withUndo = false,
): StepsReply {
  const r = arrayOf(reply);
  const o = offset;
  const status = r[o];
  if (status === 1) {
    return {
      admitted: true,
      nowUs: int(r, o + 1),
      claimedHold: r[o + 2] === 1,
      tats: ints(r, o + 3, n),
      undo: withUndo ? r.slice(o + 3 + n, o + 3 + 2 * n).map(String) : NO_UNDO,
    };
  }
  if (status !== 0) throw unexpected(status);
  const flag = int(r, o + 4);
  return {
    admitted: false,
    nowUs: int(r, o + 1),
    setter: int(r, o + 2) - 1,
    delayUs: int(r, o + 3),
    reserved: flag === 2 ? undefined : flag === 1,
    tats: ints(r, o + 5, n),
  };
}

/**
 * The entries of a batch reply (mode `b`): the offset of each decision's reply in the flat array,
 * in order. A malformed reply gives fewer offsets than decisions.
 *
 * @internal
 */
export function batchReplyOffsets(reply: unknown, decisions: number): number[] {
  const flat = Array.isArray(reply) ? reply : [];
  const offsets: number[] = [];
  let offset = 0;
  for (let i = 0; i < decisions; i++) {
    const length = flat[offset];
    if (typeof length !== 'number') break;
    offsets.push(offset + 1);
    offset += 1 + length;
  }
  return offsets;
}

/**
 * The reply of mode `u` (a refund) over `n` steps: the script's time and each step's TAT.
 *
 * @internal
 */
export function readUndoReply(
  reply: unknown,
  n: number,
): { readonly nowUs: number; readonly tats: readonly number[] } {
  const r = arrayOf(reply);
  return { nowUs: int(r, 0), tats: ints(r, 1, n) };
}

/**
 * The reply of mode `r` (a reservation): whether a slot is now held, and its delay, µs.
 *
 * @internal
 */
export function readReserveReply(reply: unknown): {
  readonly reserved: boolean;
  readonly delayUs: number;
} {
  const r = arrayOf(reply);
  return { reserved: r[2] === 1, delayUs: int(r, 1) };
}

const FRESH: MessageRecord = Object.freeze({ fresh: true });
const SEEN: MessageRecord = Object.freeze({ fresh: false });
const ORPHANED: MessageRecord = Object.freeze({ fresh: false, orphaned: true });

/**
 * The record a store answers when it cannot tell whether a message is a copy.
 *
 * @internal
 */
export const UNAVAILABLE_RECORD: MessageRecord = Object.freeze({
  fresh: false,
  unavailable: true,
});

/**
 * The reply of mode `m` (remember a message) as a {@link MessageRecord}.
 *
 * @internal
 */
export function readRememberReply(reply: unknown): MessageRecord {
  const r = arrayOf(reply);
  if (r[0] === 1) return FRESH;
  const taskId = String(r[1] ?? '');
  if (taskId !== '') return { fresh: false, taskId };
  return r[2] === 1 ? ORPHANED : SEEN;
}

/**
 * The decision a one-slot reply means for `steps`; the leases are `leaseBase.<step>`.
 *
 * @internal
 */
export function decisionOfReply(
  input: DecisionInput,
  steps: readonly RequestStep[],
  reply: StepsReply,
  leaseBase: string,
): Decision {
  const limits: LimitState[] = [];
  if (reply.admitted) {
    const leases: LeaseRef[] = [];
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i] as RequestStep;
      const p = s.policy;
      if (p.kind === 'rate') limits.push(limitStateOf(p, reply.tats[i] as number, reply.nowUs));
      else if (s.takesLease) {
        leases.push({ policyIndex: p.index, key: s.key, leaseId: `${leaseBase}.${i + 1}` });
      }
    }
    return { admitted: true, limits, leases, claimedHold: reply.claimedHold };
  }
  for (let i = 0; i < steps.length; i++) {
    const p = (steps[i] as RequestStep).policy;
    if (p.kind !== 'rate') continue;
    const tat = reply.tats[i] as number;
    limits.push(
      i === reply.setter
        ? rejectingLimitState(p, reply.delayUs)
        : limitStateOf(p, tat < 0 ? undefined : tat, reply.nowUs),
    );
  }
  const setter = steps[reply.setter];
  if (setter === undefined) throw unexpected(reply.setter + 1);
  return rejectedDecision(setter, input, reply.delayUs, reply.reserved, limits);
}
