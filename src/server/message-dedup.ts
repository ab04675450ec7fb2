/**
 * @module message-dedup
 * Deduplication of retried messages by (caller, messageId), one protocol per kind of store
 * (in-process or shared), chosen by capability, never by class.
 */

import type { Rejection } from '../core/rejection.js';
import { REASONS } from '../core/rejection.js';
import type { MessageRecord } from '../store/message-records.js';
import { messageRecordKey } from '../store/message-records.js';
import type { Store, SynchronousStore } from '../store/store.js';
import { AnswerBudget } from './answer-budget.js';
import { type AdmissionOutcome, DEDUP_UNAVAILABLE_POLICY } from './limiter-api.js';
import {
  type AdmissionRequest,
  DEFAULT_LIMITER_OPTIONS,
  type LimiterObserver,
  type ResolvedDedupOptions,
} from './limiter-options.js';
import {
  answerBytes,
  decodeMessageAnswer,
  encodeMessageAnswer,
  isMessageAnswer,
  type MessageAnswer,
} from './message-answer.js';
import { PendingMessages } from './pending-messages.js';

/** Dedup entries that are not task ids. */
const MARK = {
  /** Nothing ran (rejected, or ended before the executor started): a copy may run. */
  retryable: '\u0000retryable',
  /** The executor ran and answered with a message: no task to return. */
  noTask: '\u0000no-task',
  /** Admitted, task not created yet. */
  pending: '\u0000pending',
} as const;

/** How soon a copy of a message still in progress (or unverifiable) is told to come back, ms. */
const RETRY_MS = DEFAULT_LIMITER_OPTIONS.dedup.retryInProgressMs;

/** Decides a request; `key` is its message's record key when it is deduplicated. */
export type DecideMessage = (
  request: AdmissionRequest,
  key: string | undefined,
) => AdmissionOutcome | Promise<AdmissionOutcome>;

/**
 * The deduplication of one limiter. With an in-process store, check, decide and record are one
 * synchronous step and a record is written only once a message is admitted; with a shared store,
 * a pending record owned by this process ({@link PendingMessages}) turns orphaned when not renewed.
 *
 * @example
 * ```ts
 * const dedup = new MessageDedup(store, synchronousStore(store), resolved, observer, decideNow, () => clock.nowMs());
 * const outcome = dedup.admit({ caller: 'a', method: 'SendMessage', messageId: 'm-1', binding: 'rest' });
 * ```
 */
export class MessageDedup {
  /** Shared stores: this process's pending records (an in-process store keeps its own). */
  private readonly shared: PendingMessages | undefined;
  /** Local waiters for a first copy's outcome (task id or mark), by record key. */
  private readonly waiters = new Map<string, ((taskId: string | undefined) => void)[]>();
  /** The bound on the Message answers kept (undefined: none kept). */
  private readonly answers: AnswerBudget | undefined;

  constructor(
    store: Store,
    private readonly local: SynchronousStore | undefined,
    private readonly options: ResolvedDedupOptions,
    private readonly observer: LimiterObserver | undefined,
    private readonly decide: DecideMessage,
    /** The limiter's time, ms (answers are counted against their bound until their TTL ends). */
    private readonly nowMs: () => number,
  ) {
    this.answers =
      options.answers === undefined ? undefined : new AnswerBudget(options.answers, options.ttlMs);
    this.shared =
      local !== undefined
        ? undefined
        : new PendingMessages({
            store,
            ttlMs: options.ttlMs,
            pendingTtlMs: options.pendingTtlMs,
            maxLocalRecords: DEFAULT_LIMITER_OPTIONS.dedup.maxLocalRecords,
          });
  }

  /** Whether `request` is deduplicated (a message of a deduplicated method with a messageId). */
  applies(request: AdmissionRequest): boolean {
    return request.messageId !== undefined && this.options.methods.has(request.method);
  }

  /** Admits a deduplicated message: decided if fresh, else answered as a copy. */
  admit(request: AdmissionRequest & { readonly messageId: string }): ReturnType<DecideMessage> {
    const messageId = request.messageId;
    // One key per message for every table it touches (records, pending, waiters).
    const key = messageRecordKey(request.caller, messageId);
    if (this.local !== undefined) {
      // In-process store: a fresh message (the common case) is decided synchronously, and
      // recorded only once admitted (the ticket does it): check, decide and record are one
      // synchronous step, so no other copy can slip in between.
      const seen = this.local.peekMessageKeySync(key);
      return seen === undefined
        ? this.decide(request, key)
        : this.admitSeen(request, messageId, key, seen);
    }
    const pending = this.shared as PendingMessages;
    // A copy of a message this process admitted is answered from its own records.
    const here = pending.peekLocal(key);
    if (here !== undefined) return this.admitSeen(request, messageId, key, here);
    return pending
      .remember(request.caller, messageId, key)
      .then((seen) => this.admitShared(request, messageId, key, seen, false));
  }

  /** The message was admitted (its ticket exists): copies now find its record. */
  admitted(key: string): void {
    if (this.local !== undefined) this.local.rememberMessageKeySync(key, this.options.ttlMs);
    else this.shared?.admitted(key);
  }

  /** The message was rejected: nothing ran (an in-process store never recorded it). */
  rejected(request: AdmissionRequest, key: string): void {
    if (this.local === undefined) this.record(request, key, MARK.retryable);
  }

  /** The decision failed: nothing ran, the pending record must not outlive it. */
  failed(request: AdmissionRequest, key: string): void {
    this.record(request, key, MARK.retryable);
  }

  /**
   * The first event showed whether a task exists: its id, or undefined for a message reply —
   * `answer`, kept for copies when it fits its bounds (else a copy is told "no task").
   */
  settled(
    request: AdmissionRequest,
    key: string,
    taskId: string | undefined,
    answer?: MessageAnswer,
  ): void {
    this.record(request, key, taskId ?? this.keptAnswer(request, answer) ?? MARK.noTask);
  }

  /** The record value of a Message answer when it is kept, else undefined. */
  private keptAnswer(request: AdmissionRequest, answer: MessageAnswer | undefined) {
    if (answer === undefined || this.answers === undefined) return undefined;
    const value = encodeMessageAnswer(answer, this.options.answers?.maxBytes);
    if (value === undefined) return undefined;
    return this.answers.take(request.caller, answerBytes(value), this.nowMs()) ? value : undefined;
  }

  /**
   * The response ended before a task was bound: with task tracking nothing ran (a copy may run);
   * without it we cannot tell, so a copy never runs again.
   */
  endedUnbound(
    request: AdmissionRequest,
    key: string,
    { tracking }: { readonly tracking: boolean },
  ): void {
    this.record(request, key, tracking ? MARK.retryable : MARK.noTask);
  }

  /**
   * Whether the SDK may start the executor: false when this process no longer owns the
   * message's pending record in a shared store (it lapsed unrenewed, so a copy elsewhere may
   * have taken it over and run).
   */
  mayStart(key: string): boolean {
    return this.shared === undefined || this.shared.mayStart(key);
  }

  /** Stops renewing pending records. */
  close(): void {
    this.shared?.close();
  }

  /**
   * Records the outcome of a deduplicated message and wakes the copies waiting for it. Store
   * errors are ignored (a missing record means "run it").
   */
  private record(request: AdmissionRequest, key: string, value: string): void {
    const messageId = request.messageId;
    if (messageId === undefined || !this.options.methods.has(request.method)) return;
    if (this.waiters.size > 0) {
      const list = this.waiters.get(key);
      if (list !== undefined) {
        this.waiters.delete(key);
        for (const resolve of list) resolve(value);
      }
    }
    if (this.local !== undefined) {
      // "Nothing ran" needs no record: a missing record already means "run it".
      if (value === MARK.retryable) this.local.forgetMessageKeySync(key);
      else this.local.recordMessageTaskKeySync(key, value, this.options.ttlMs);
      return;
    }
    if (this.shared === undefined) return;
    if (value === MARK.retryable) this.shared.release(request.caller, messageId, key);
    else this.shared.settle(request.caller, messageId, key, value);
  }

  private waitForTask(key: string): Promise<string | undefined> {
    return new Promise((resolve) => {
      const list = this.waiters.get(key) ?? [];
      let done = false;
      const timer = setTimeout(() => {
        done = true;
        resolve(undefined);
      }, this.options.waitForTaskMs);
      timer.unref();
      list.push((taskId) => {
        if (done) return;
        clearTimeout(timer);
        resolve(taskId);
      });
      this.waiters.set(key, list);
    });
  }

  private duplicate(
    request: AdmissionRequest,
    taskId: string | undefined,
    answer?: MessageAnswer,
  ): AdmissionOutcome {
    this.observer?.deduplicated?.(request);
    return answer === undefined
      ? { status: 'duplicate', taskId }
      : { status: 'duplicate', taskId, answer };
  }

  /**
   * A copy of a message this caller sent before (within the dedup TTL): its task, the Message it
   * was answered with, "processed without a task", or — while the first copy's outcome is not
   * known yet — a retryable 503 `MESSAGE_IN_PROGRESS` (never "already processed" for a call that
   * may still fail or run).
   */
  private async admitSeen(
    request: AdmissionRequest,
    messageId: string,
    key: string,
    seen: MessageRecord,
  ): Promise<AdmissionOutcome> {
    let value = seen.fresh ? undefined : seen.taskId;
    // The first copy is still in flight in this process: wait (bounded) for its outcome. (The
    // in-process store holds records of this process's admitted messages only.)
    const pendingHere =
      this.local !== undefined ? value === undefined : this.shared?.isPendingHere(key);
    if ((value === undefined || value === MARK.pending) && pendingHere) {
      value = await this.waitForTask(key);
    }
    if (value === MARK.noTask) return this.duplicate(request, undefined);
    if (value !== undefined && isMessageAnswer(value)) {
      // Unreadable (written by another version): as if no answer was kept.
      return this.duplicate(request, undefined, decodeMessageAnswer(value));
    }
    if (value !== undefined && !value.startsWith('\u0000')) return this.duplicate(request, value);
    return this.inProgress(request, messageId);
  }

  /** The answer to a copy whose first copy's outcome is not known yet: retry in 1 s. */
  private inProgress(request: AdmissionRequest, messageId: string): AdmissionOutcome {
    this.observer?.deduplicated?.(request);
    const rejection: Rejection = {
      kind: 'overload',
      reason: REASONS.inProgress,
      retryAfterMs: RETRY_MS,
      policy: 'deduplication',
      scope: 'caller',
      subject: `caller:${request.caller}`,
      method: request.method,
      message: `A copy of message ${messageId} is still being processed; retry in ${RETRY_MS / 1000} s for its task`,
    };
    return { status: 'rejected', rejection, limits: [] };
  }

  /** The lookup in the shared task store: a task id, undefined (none), or null (lookup failed). */
  private async lookUp(request: AdmissionRequest): Promise<string | undefined | null> {
    const findTask = this.options.findTask;
    if (findTask === undefined) return undefined;
    try {
      return await findTask(request);
    } catch {
      return null;
    }
  }

  /**
   * A shared store's answer to a message: decide it (fresh: this process owns its pending
   * record), answer it as a copy, or — orphaned or unreachable — look for its task in the shared
   * task store first.
   */
  private async admitShared(
    request: AdmissionRequest,
    messageId: string,
    key: string,
    seen: MessageRecord,
    tookOver: boolean,
  ): Promise<AdmissionOutcome> {
    if (seen.fresh) return this.decide(request, key);
    if (seen.unavailable === true) {
      const taskId = await this.lookUp(request);
      if (typeof taskId === 'string') return this.duplicate(request, taskId);
      if (this.options.runWhenStoreUnavailable) return this.decide(request, key);
      return this.unverifiable(request, messageId);
    }
    const shared = this.shared as PendingMessages;
    if (seen.orphaned === true) {
      // Its owner stopped renewing it before a task id was recorded: the message never started
      // (the owner does not start it once the record lapsed), or started and saved its task.
      const taskId = await this.lookUp(request);
      if (taskId === null || tookOver) return this.inProgress(request, messageId);
      if (taskId !== undefined) {
        shared.settle(request.caller, messageId, key, taskId);
        return this.duplicate(request, taskId);
      }
      const again = await shared.remember(request.caller, messageId, key, { takeOver: true });
      return this.admitShared(request, messageId, key, again, true);
    }
    return this.admitSeen(request, messageId, key, seen);
  }

  /** The answer to a message whose store cannot say whether it is a copy: retry in 1 s. */
  private unverifiable(request: AdmissionRequest, messageId: string): AdmissionOutcome {
    const rejection: Rejection = {
      kind: 'overload',
      retryAfterMs: RETRY_MS,
      policy: DEDUP_UNAVAILABLE_POLICY,
      scope: 'agent',
      subject: 'agent',
      method: request.method,
      message: `Cannot check whether message ${messageId} was already received (the deduplication store is unavailable); retry in ${RETRY_MS / 1000} s — it will not run twice`,
    };
    this.observer?.rejected?.(request, rejection);
    return { status: 'rejected', rejection, limits: [] };
  }
}
