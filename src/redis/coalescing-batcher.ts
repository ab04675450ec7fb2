/**
 * @module coalescing-batcher
 * `CoalescingBatcher`: single-slot decisions made while one is outstanding, sent together as one
 * script call (single node).
 */

import type { DecisionInput } from '../core/decision-state.js';
import type { Decision } from '../core/rejection.js';
import type { Waiter } from './deadline-timer.js';
import { type DecisionScript, SCRIPT_MODES } from './decision-script.js';
import type { RequestStep } from './redis-keys.js';
import type { RedisRooms } from './redis-rooms.js';
import { batchReplyOffsets, decisionOfReply, readStepsReply } from './script-replies.js';

/**
 * Most decisions coalesced into one script call. Small enough that Redis starts on a batch while
 * the client is still producing the next (the two overlap instead of taking turns).
 */
const MAX_BATCH = 16;

/**
 * A single-slot decision waiting to be sent (alone, or coalesced with others into one call).
 *
 * @internal
 */
export interface PendingDecision {
  /** The policy set's script when the decision was made (its steps' rows are that set's). */
  readonly script: DecisionScript;
  readonly input: DecisionInput;
  readonly steps: readonly RequestStep[];
  readonly holdKey: string;
  readonly lag: string;
  readonly leaseBase: string;
  readonly probe: boolean;
  readonly waiter: Waiter;
  readonly resolve: (decision: Decision) => void;
}

/**
 * The queue of one store's single-slot decisions (single node). A decision made while none is
 * outstanding is sent at once; those made while one is outstanding are collected until the end
 * of the event-loop turn and sent as one script call (mode `b`) that decides them one after the
 * other, in arrival order, at one instant: one `TIME`, one write and one reply.
 *
 * @internal
 */
export class CoalescingBatcher {
  /** Decisions sent coalesced with others in one script call. */
  coalescedDecisions = 0;
  /** Script calls that carried coalesced decisions. */
  batches = 0;
  private readonly rooms: Pick<RedisRooms, 'runner' | 'failure'>;
  private readonly coalesce: boolean;
  /** Decisions waiting for the end of this event-loop turn, the time and the script they share. */
  private batch: PendingDecision[] = [];
  private batchNow = '';
  private batchScript: DecisionScript | undefined;
  private flushScheduled = false;
  /** Decision calls sent and not yet answered. */
  private callsInFlight = 0;
  /** `String(i)` by parameter row, filled as rows are used. */
  private readonly rowArgs: string[] = [];

  constructor(rooms: Pick<RedisRooms, 'runner' | 'failure'>, coalesce: boolean) {
    this.rooms = rooms;
    this.coalesce = coalesce;
  }

  /** Sends `pending` now, or with what else arrives during this event-loop turn. */
  submit(pending: PendingDecision, now: string): void {
    // Nothing outstanding: send at once (no added latency at low load). Otherwise coalesce
    // what arrives during this event-loop turn into one call.
    if (!this.coalesce || pending.probe || (this.callsInFlight === 0 && this.batch.length === 0)) {
      this.send([pending], now, pending.script);
      return;
    }
    // One call runs one script at one instant: a policy-set swap or a new time starts a new batch.
    if (this.batch.length > 0 && (this.batchNow !== now || this.batchScript !== pending.script)) {
      this.flush();
    }
    this.batchNow = now;
    this.batchScript = pending.script;
    this.batch.push(pending);
    if (this.batch.length >= MAX_BATCH) {
      this.flush();
      return;
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushBatch);
    }
  }

  /** Sends what is waiting now. */
  flush(): void {
    const batch = this.batch;
    const first = batch[0];
    if (first === undefined) return;
    this.batch = [];
    this.send(batch, this.batchNow, first.script);
  }

  private readonly flushBatch = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  private rowArg(paramIndex: number): string {
    let arg = this.rowArgs[paramIndex];
    if (arg === undefined) {
      arg = String(paramIndex);
      this.rowArgs[paramIndex] = arg;
    }
    return arg;
  }

  /** One script call for `pending` (one decision: mode d/D; several: mode b). */
  private send(pending: readonly PendingDecision[], now: string, script: DecisionScript): void {
    const { runner, failure } = this.rooms;
    const { deadlines } = runner;
    for (const d of pending) deadlines.rebase(d.waiter);
    const rest: string[] = [];
    for (const d of pending) for (const step of d.steps) rest.push(step.key);
    const numKeys = rest.length;
    const single = pending.length === 1 ? pending[0] : undefined;
    if (single !== undefined) {
      if (single.lag !== '' || single.leaseBase !== '') {
        rest.push(SCRIPT_MODES.decideLong, now, single.holdKey, single.lag, single.leaseBase);
      } else {
        rest.push(SCRIPT_MODES.decide, now, single.holdKey);
      }
      for (const step of single.steps) rest.push(this.rowArg(step.policy.paramIndex));
    } else {
      this.batches++;
      this.coalescedDecisions += pending.length;
      rest.push(SCRIPT_MODES.batch, now);
      for (const d of pending) {
        rest.push(String(d.steps.length), d.holdKey, d.lag, d.leaseBase);
        for (const step of d.steps) rest.push(this.rowArg(step.policy.paramIndex));
      }
    }
    this.callsInFlight++;
    runner.send(
      script,
      numKeys,
      rest,
      (reply) => {
        this.callsInFlight--;
        if (single !== undefined) {
          this.deliver(single, reply, 0);
          return;
        }
        const offsets = batchReplyOffsets(reply, pending.length);
        pending.forEach((d, i) => {
          this.deliver(d, reply, offsets[i]);
        });
      },
      (error: unknown) => {
        this.callsInFlight--;
        for (const d of pending) {
          if (deadlines.settle(d.waiter)) d.resolve(failure.failed(error, d.input, d.probe));
        }
      },
    );
  }

  /** Answers `d` from its reply at `reply[offset]` (undefined: the batch reply had no entry). */
  private deliver(d: PendingDecision, reply: unknown, offset: number | undefined): void {
    const { runner, failure } = this.rooms;
    if (!runner.deadlines.settle(d.waiter)) return;
    let decision: Decision;
    try {
      if (offset === undefined) throw new Error('a2a-ratelimit: batch reply without this decision');
      const decoded = readStepsReply(reply, d.steps.length, offset);
      decision = failure.succeeded(
        decisionOfReply(d.input, d.steps, decoded, d.leaseBase),
        d.probe,
      );
    } catch (error) {
      decision = failure.failed(error, d.input, d.probe);
    }
    d.resolve(decision);
  }
}
