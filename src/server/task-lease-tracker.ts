/**
 * @module task-lease-tracker
 * Ties admissions to the SDK's tasks through its `ExecutionEventBusManager`: task leases released
 * when the task ends, and the first event for dedup. No SDK import.
 */

import { BrandedError } from '../core/branded-error.js';
import type { LeaseRef } from '../core/rejection.js';
import { type TappedBus, type TaskWatcher, taskTapOf } from '../core/task-tap.js';
import type { AnswerScope, MessageAnswer } from './message-answer.js';

/**
 * An agent event as the SDK's event bus carries it (`AgentExecutionEvent`), reduced to what the
 * tracker reads.
 */
export interface AgentEventLike {
  readonly kind: string;
  readonly data?: { readonly status?: { readonly state?: number } | undefined } | undefined;
}

import {
  type EventBusLike,
  type EventBusManagerLike,
  TERMINAL_TASK_STATES,
} from '../core/task-events.js';

export { type EventBusLike, type EventBusManagerLike, TERMINAL_TASK_STATES };

/**
 * A2A `TaskState` numbers where a task waits on its caller (INPUT_REQUIRED, AUTH_REQUIRED).
 *
 * @example
 * ```ts
 * INTERRUPTED_TASK_STATES.has(6); // true (TASK_STATE_INPUT_REQUIRED)
 * ```
 */
export const INTERRUPTED_TASK_STATES: ReadonlySet<number> = new Set([6, 8]);

/**
 * Stable `code` strings of the errors that keep a task from starting.
 *
 * @example
 * ```ts
 * if (e.code === TASK_START_ERROR_CODES.pendingLost) console.log('not started; retry');
 * ```
 */
export const TASK_START_ERROR_CODES = {
  pendingLost: 'ERR_A2A_PENDING_RECORD_LOST',
  admissionEnded: 'ERR_A2A_ADMISSION_ENDED',
} as const;

/**
 * Thrown into the SDK (which then fails the request, before the executor starts) when an
 * admitted message's pending record in a shared store lapsed before its task began: a copy on
 * another replica may have taken the message over, so this one must not run it.
 *
 * @example
 * ```ts
 * if (error instanceof PendingRecordLostError) console.log('not started; the caller retries');
 * ```
 */
export class PendingRecordLostError extends BrandedError<
  typeof TASK_START_ERROR_CODES.pendingLost
> {
  declare readonly name: 'PendingRecordLostError';
  /** Brand (`is<name>`, as every error of this package). */
  declare readonly isPendingRecordLostError: true;

  constructor(taskId: string) {
    super(
      'PendingRecordLostError',
      TASK_START_ERROR_CODES.pendingLost,
      `a2a-ratelimit: the message's pending deduplication record lapsed before task ${taskId} started; not started (retry the message)`,
    );
  }
}

/**
 * Thrown where the SDK would start a task for an admission that has already ended: its client
 * went away before the SDK got to the executor, and the admission's leases and deduplication
 * record are gone with it. Starting now would run outside every limit, and a retry could run the
 * message a second time, so nothing starts (the SDK answers an internal error, to nobody).
 *
 * @example
 * ```ts
 * if (error instanceof AdmissionEndedError) console.log('the caller left before its task started');
 * ```
 */
export class AdmissionEndedError extends BrandedError<
  typeof TASK_START_ERROR_CODES.admissionEnded
> {
  declare readonly name: 'AdmissionEndedError';
  /** Brand (`is<name>`, as every error of this package). */
  declare readonly isAdmissionEndedError: true;

  constructor(taskId: string) {
    super(
      'AdmissionEndedError',
      TASK_START_ERROR_CODES.admissionEnded,
      `a2a-ratelimit: the admission of task ${taskId} ended (its client left) before the task started; not started`,
    );
  }
}

/** What the tracker needs from an admission ticket. */
export interface TrackedTicket {
  readonly bound: boolean;
  /** False when the message must not start (its shared pending record lapsed). */
  mayStart?(): boolean;
  takeTaskLeases(): LeaseRef[];
  /** The outcome: a task id, or none and (for a Message reply) the Message answer. */
  settleDedup(taskId: string | undefined, answer?: MessageAnswer): void;
}

/** A task whose leases are held until it ends. */
interface TaskRecord {
  leases: LeaseRef[];
  interrupted: boolean;
  /** When the task entered an interrupted state (kept leases stop being renewed), ms. */
  interruptedAtMs: number;
  /** The latest run's watcher: the one that follows the task's state for the record. */
  watcher: RunWatcher | undefined;
}

/**
 * Options of {@link TaskLeaseTracker}.
 *
 * @example
 * ```ts
 * new TaskLeaseTracker({ releaseOnInterrupted: true, release: (l) => store.releaseSync(l), ticketOf: (id) => tickets.get(id), nowMs: () => Date.now() });
 * ```
 */
export interface TaskLeaseTrackerOptions {
  /** Release a task's leases when it enters INPUT_REQUIRED / AUTH_REQUIRED. */
  readonly releaseOnInterrupted: boolean;
  /** Frees leases in the store. */
  readonly release: (leases: readonly LeaseRef[]) => void;
  /** The open admission with this ticket id. */
  readonly ticketOf: (ticketId: string) => TrackedTicket | undefined;
  /** Current time, ms. */
  readonly nowMs: () => number;
}

/**
 * The ticket id an adapter put on the request, read from a `ServerCallContext` (its `state`
 * map's `headers`), or undefined.
 *
 * @example
 * ```ts
 * ticketIdOf(requestContext.context, TICKET_HEADER); // 't1f.2c'
 * ```
 */
export function ticketIdOf(context: unknown, header: string): string | undefined {
  const state = (context as { state?: { get?: (key: string) => unknown } } | undefined)?.state;
  const headers = typeof state?.get === 'function' ? state.get('headers') : undefined;
  if (headers === null || typeof headers !== 'object') return undefined;
  const value = (headers as Record<string, unknown>)[header];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The SDK scope of a `ServerCallContext` (its tenant and user name, as the SDK scopes tasks),
 * read structurally.
 *
 * @example
 * ```ts
 * answerScopeOf(context); // { tenant: '', owner: 'alice' }
 * ```
 */
export function answerScopeOf(context: unknown): AnswerScope {
  const c = context as
    | { readonly tenant?: unknown; readonly user?: { readonly userName?: unknown } }
    | undefined;
  const tenant = c?.tenant;
  const owner = c?.user?.userName;
  return {
    tenant: typeof tenant === 'string' ? tenant : '',
    owner: typeof owner === 'string' ? owner : '',
  };
}

/**
 * What the tracker watches on a tapped bus for one run: the events published and the end of the
 * flow, and the admission whose deduplication entry waits for the first event.
 */
class RunWatcher implements TaskWatcher {
  constructor(
    private readonly tracker: TaskLeaseTracker,
    readonly taskId: string,
    /** The admission whose deduplication entry waits for the first event. */
    public pending: TrackedTicket | undefined,
    /**
     * The call context the SDK asked for the bus with, while `pending` (its scope goes with a
     * Message answer); dropped with it.
     */
    public context: unknown = undefined,
  ) {}

  event(event: AgentEventLike): void {
    this.tracker.observe(this, event);
  }

  finished(): void {
    this.tracker.observeFinished(this);
  }
}

/**
 * Binds admissions to tasks and releases task leases when tasks end (first terminal or, by
 * default, interrupted state, the flow finishing, or the bus cleaned up). Created by
 * `createLimiter`; reached through `limiter.trackTasks(manager)`. A custom bus manager must hand
 * out, and finish, the bus it is given back.
 *
 * @example
 * ```ts
 * const manager = limiter.trackTasks(new DefaultExecutionEventBusManager());
 * ```
 */
export class TaskLeaseTracker {
  /** Tasks holding leases, by task id. */
  private readonly records = new Map<string, TaskRecord>();

  constructor(
    private readonly options: TaskLeaseTrackerOptions,
    private readonly header = 'x-a2a-ratelimit-ticket',
  ) {}

  /** Tasks whose leases are held. */
  size(): number {
    return this.records.size;
  }

  /** Leases of live, non-interrupted tasks (to renew). */
  liveLeases(): LeaseRef[] {
    const out: LeaseRef[] = [];
    for (const r of this.records.values()) if (!r.interrupted) out.push(...r.leases);
    return out;
  }

  /** After a policy-set change: every task's leases mapped onto the new set (`leaseMapping`). */
  mapLeases(map: (leases: readonly LeaseRef[]) => LeaseRef[]): void {
    for (const r of this.records.values()) if (r.leases.length > 0) r.leases = map(r.leases);
  }

  /**
   * Subscribes to `manager`'s task tap (made around it unless it is one): the bus of an admitted
   * request is watched (binding its leases and deduplication entry to the task), and so is the bus
   * of a task holding leases, whoever drives it; every other call goes through.
   *
   * @example
   * ```ts
   * new DefaultRequestHandler(card, store, executor, tracker.wrap(new DefaultExecutionEventBusManager()));
   * ```
   */
  wrap<M extends EventBusManagerLike>(manager: M): M {
    const tap = taskTapOf(manager);
    tap.subscribe(this);
    return tap as unknown as M;
  }

  /** The SDK asks for a task's bus: refuses an ended or lapsed admission, else watches. @internal */
  open(taskId: string, context: unknown): ((tap: () => TappedBus) => void) | undefined {
    const ticketId = ticketIdOf(context, this.header);
    const ticket = ticketId === undefined ? undefined : this.options.ticketOf(ticketId);
    // The adapter set this ticket's id on the request; it is gone once the ticket ended.
    if (ticketId !== undefined && ticket === undefined) throw new AdmissionEndedError(taskId);
    if (ticket !== undefined && !ticket.bound) {
      if (ticket.mayStart?.() === false) {
        // The SDK calls this right before it starts the executor: refusing here is the last
        // point where a message that may now run elsewhere is kept from running twice.
        throw new PendingRecordLostError(taskId);
      }
      return (tap) => this.bind(taskId, tap(), ticket, context);
    }
    // A task holding leases is watched whoever drives it (a request with no ticket too).
    if (this.records.size === 0 || !this.records.has(taskId)) return undefined;
    return (tap) => {
      const record = this.records.get(taskId);
      if (record === undefined) return;
      record.watcher = new RunWatcher(this, taskId, undefined);
      tap().watch(record.watcher);
    };
  }

  /** The SDK cleaned the task's bus up: its leases go. @internal */
  cleanedUp(taskId: string): void {
    this.end(taskId, undefined);
  }

  private bind(taskId: string, bus: TappedBus, ticket: TrackedTicket, context: unknown): void {
    const watcher = new RunWatcher(this, taskId, ticket, context);
    bus.watch(watcher);
    const leases = ticket.takeTaskLeases();
    let record = this.records.size === 0 ? undefined : this.records.get(taskId);
    if (leases.length > 0) {
      if (record === undefined) {
        record = { leases, interrupted: false, interruptedAtMs: 0, watcher };
        this.records.set(taskId, record);
      } else record.leases.push(...leases);
    }
    if (record !== undefined) {
      record.interrupted = false;
      record.watcher = watcher;
    }
  }

  /** An event published on a watched bus (before the SDK sees it). @internal */
  observe(watcher: RunWatcher, event: AgentEventLike): void {
    const ticket = watcher.pending;
    if (ticket !== undefined) {
      watcher.pending = undefined;
      const context = watcher.context;
      watcher.context = undefined;
      if (event.kind !== 'message') ticket.settleDedup(watcher.taskId);
      else ticket.settleDedup(undefined, { message: event.data, ...answerScopeOf(context) });
    }
    if (this.records.size === 0) return;
    const record = this.records.get(watcher.taskId);
    // Every run's watcher sees the bus's events: the latest run's follows the task's state.
    if (record === undefined || record.watcher !== watcher) return;
    const state = event.kind === 'message' ? undefined : event.data?.status?.state;
    if (state === undefined) return;
    if (TERMINAL_TASK_STATES.has(state)) {
      this.end(watcher.taskId, record);
    } else if (INTERRUPTED_TASK_STATES.has(state)) {
      record.interrupted = true;
      record.interruptedAtMs = this.options.nowMs();
      if (this.options.releaseOnInterrupted) this.end(watcher.taskId, record);
    } else {
      record.interrupted = false;
    }
  }

  /**
   * The execution flow ended on a tracked bus. A task left waiting on its caller keeps its
   * leases when `releaseOnInterrupted` is off; they are no longer renewed and expire by TTL
   * unless the task resumes (a follow-up message binds to the same record).
   *
   * @internal
   */
  observeFinished(watcher: RunWatcher): void {
    const record = this.records.size === 0 ? undefined : this.records.get(watcher.taskId);
    const keep = record?.interrupted === true && !this.options.releaseOnInterrupted;
    const ticket = watcher.pending;
    if (ticket !== undefined) {
      // Finished before any event: no task, unless it is one kept waiting on its caller.
      watcher.pending = undefined;
      watcher.context = undefined;
      ticket.settleDedup(keep ? watcher.taskId : undefined);
    }
    if (!keep && (record === undefined || record.watcher === watcher)) {
      this.end(watcher.taskId, record);
    }
  }

  /**
   * Forgets interrupted tasks whose kept leases have expired in the store (no longer renewed).
   *
   * @example
   * ```ts
   * tracker.sweepInterrupted(clock.nowMs(), 600_000);
   * ```
   */
  sweepInterrupted(nowMs: number, ttlMs: number): void {
    for (const [taskId, record] of this.records) {
      if (record.interrupted && nowMs - record.interruptedAtMs > ttlMs) this.end(taskId, record);
    }
  }

  private end(taskId: string, known: TaskRecord | undefined): void {
    if (this.records.size === 0) return;
    const record = known ?? this.records.get(taskId);
    if (record === undefined) return;
    this.records.delete(taskId);
    this.options.release(record.leases);
    record.leases = [];
    record.watcher = undefined;
  }
}
