/**
 * @module pending-messages
 * This process's side of dedup records in a shared store: owned pending records, their renewal,
 * outcomes, and a local copy of its own records.
 */

import { randomBytes } from 'node:crypto';
import { systemClock } from '../platform/system-clock.js';
import type { MessageRecord } from '../store/message-records.js';
import { MessageRecords } from '../store/message-records.js';
import { positiveOption } from '../store/positive-option.js';
import type { Store } from '../store/store.js';

/**
 * Options of {@link PendingMessages}.
 */
export interface PendingMessagesOptions {
  /** The shared store (its `renewPendingMessages` / `forgetPendingMessage` are used when present). */
  readonly store: Store;
  /** How long a message's record lives, ms (the dedup TTL). */
  readonly ttlMs: number;
  /** How long a record stays pending without a renewal, ms. Renewed every third of it. */
  readonly pendingTtlMs: number;
  /** Local records kept at most (this process's own messages). */
  readonly maxLocalRecords: number;
  /** Monotonic time, ms; default `performance.now`. */
  readonly nowMs?: () => number;
}

/** A pending record this process owns in the shared store. */
interface OwnedRecord {
  readonly caller: string;
  readonly messageId: string;
  /** When the last write that made or renewed it was sent (it is pending until then + TTL), ms. */
  confirmedAtMs: number;
  /** The store said it is no longer ours (taken over after it lapsed, or gone). */
  lost: boolean;
}

/** An outcome the store did not take (outage); written again on every renewal tick. */
interface UnrecordedOutcome {
  readonly caller: string;
  readonly messageId: string;
  readonly value: string;
}

/**
 * Fraction of the pending TTL after the last confirmed write past which this process no longer
 * starts the message's executor: the rest is margin for a copy elsewhere that reads the record as
 * orphaned on a clock that runs slightly ahead.
 */
const START_WITHIN_FRACTION = 0.8;

/**
 * This process's pending deduplication records in a shared store. A record stays pending only
 * for `pendingTtlMs` unless renewed (as a lease), so a process that dies leaves a record that turns
 * orphaned within seconds instead of answering "in progress" for the whole TTL.
 *
 * @example
 * ```ts
 * const pending = new PendingMessages({ store, ttlMs: 900_000, pendingTtlMs: 5_000, maxLocalRecords: 100_000 });
 * const seen = await pending.remember('orchestrator-7', 'm-1', key);
 * ```
 */
export class PendingMessages {
  /** This process, in the records it owns (hex, no spaces). */
  readonly owner = randomBytes(8).toString('hex');
  private readonly store: Store;
  private readonly ttlMs: number;
  private readonly pendingTtlMs: number;
  private readonly nowMs: () => number;
  /** Messages this process admitted: pending (no task id) or their outcome. */
  private readonly local: MessageRecords;
  private readonly owned = new Map<string, OwnedRecord>();
  private readonly unrecorded = new Map<string, UnrecordedOutcome>();
  private readonly timer: ReturnType<typeof setInterval>;
  private renewing = false;

  constructor(options: PendingMessagesOptions) {
    this.store = options.store;
    this.ttlMs = options.ttlMs;
    this.pendingTtlMs = positiveOption('PendingMessages: pendingTtlMs', options.pendingTtlMs, 0);
    this.nowMs = options.nowMs ?? (() => performance.now());
    this.local = new MessageRecords(options.maxLocalRecords);
    this.timer = setInterval(() => void this.tick(), Math.max(50, this.pendingTtlMs / 3));
    this.timer.unref();
  }

  /** Pending records owned and outcomes not yet recorded (for tests and metrics). */
  stats(): { readonly owned: number; readonly unrecorded: number } {
    return { owned: this.owned.size, unrecorded: this.unrecorded.size };
  }

  /**
   * What this process knows of a message it admitted: undefined (nothing), `{ fresh: false }`
   * while it is pending here, or its outcome.
   *
   * @example
   * ```ts
   * pending.peekLocal(key); // { fresh: false, taskId: 'task-9' }
   * ```
   */
  peekLocal(key: string): Exclude<MessageRecord, { fresh: true }> | undefined {
    return this.local.peekKey(key, systemClock.nowMs());
  }

  /** Whether a copy's first copy is pending in this process (admitted, outcome not known yet). */
  isPendingHere(key: string): boolean {
    const seen = this.local.peekKey(key, systemClock.nowMs());
    return seen !== undefined && seen.taskId === undefined;
  }

  /**
   * Asks the shared store about a message, as its pending owner if it is fresh (or, with
   * `takeOver`, orphaned). A fresh answer makes this process the record's owner: it renews the
   * record until {@link PendingMessages.settle} or {@link PendingMessages.release}.
   *
   * @example
   * ```ts
   * const seen = await pending.remember('a', 'm-1', messageRecordKey('a', 'm-1'));
   * ```
   */
  async remember(
    caller: string,
    messageId: string,
    key: string,
    { takeOver = false }: { readonly takeOver?: boolean } = {},
  ): Promise<MessageRecord> {
    const sentAtMs = this.nowMs();
    const seen = await this.store.rememberMessage(caller, messageId, this.ttlMs, {
      owner: this.owner,
      pendingTtlMs: this.pendingTtlMs,
      takeOver,
    });
    if (seen.fresh) {
      this.owned.set(key, { caller, messageId, confirmedAtMs: sentAtMs, lost: false });
    }
    return seen;
  }

  /** The message was admitted here: copies that come back to this process wait for it. */
  admitted(key: string): void {
    this.local.rememberKey(key, this.ttlMs, systemClock.nowMs());
  }

  /**
   * Whether this process may still start the message's executor: it owns the pending record and
   * renewed it recently enough that no copy elsewhere can have taken it over. True for messages
   * it does not own a record of (admitted without the store, when told to run unchecked).
   */
  mayStart(key: string): boolean {
    const record = this.owned.get(key);
    if (record === undefined) return true;
    return (
      !record.lost &&
      this.nowMs() < record.confirmedAtMs + this.pendingTtlMs * START_WITHIN_FRACTION
    );
  }

  /** The outcome is known (a task id or a mark): record it, here and in the store (retried). */
  settle(caller: string, messageId: string, key: string, value: string): void {
    // The pending record stays owned (renewed) until the outcome is written: a write that fails
    // in an outage must not leave a record that lapses into "orphaned" and runs again.
    this.local.recordKey(key, value, this.ttlMs, systemClock.nowMs());
    this.record({ caller, messageId, value }, key);
  }

  /** Nothing ran: forget the record here and drop this process's pending record in the store. */
  release(caller: string, messageId: string, key: string): void {
    const owned = this.owned.delete(key);
    this.local.forgetKey(key);
    if (owned && this.store.forgetPendingMessage !== undefined) {
      // If this fails the record turns orphaned within the pending TTL: a copy then looks for a
      // task (there is none) and runs. Nothing to retry.
      this.store.forgetPendingMessage(caller, messageId, this.owner).catch(() => undefined);
    }
  }

  /** Stops renewing. */
  close(): void {
    clearInterval(this.timer);
  }

  private record(outcome: UnrecordedOutcome, key: string): void {
    this.store.recordMessageTask(outcome.caller, outcome.messageId, outcome.value, this.ttlMs).then(
      () => {
        if (this.unrecorded.get(key) === outcome) this.unrecorded.delete(key);
        this.owned.delete(key);
      },
      () => {
        this.unrecorded.set(key, outcome);
      },
    );
  }

  /** Renews owned pending records and writes outcomes the store did not take. */
  private async tick(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    try {
      for (const [key, outcome] of this.unrecorded) this.record(outcome, key);
      const renew = this.store.renewPendingMessages;
      if (this.owned.size === 0 || renew === undefined) return;
      const keys = [...this.owned.keys()];
      const records = keys.map((k) => this.owned.get(k) as OwnedRecord);
      const sentAtMs = this.nowMs();
      let answers: boolean[];
      try {
        answers = await renew.call(this.store, records, this.owner, this.pendingTtlMs);
      } catch {
        return; // Unreachable: the records lapse by time (mayStart), nothing else to do.
      }
      records.forEach((record, i) => {
        if (this.owned.get(keys[i] as string) !== record) return; // settled meanwhile
        if (answers[i] === true) record.confirmedAtMs = sentAtMs;
        else record.lost = true;
      });
    } finally {
      this.renewing = false;
    }
  }
}
