/**
 * @module task-lease-tracker
 * Ties admissions to the SDK's tasks through its `ExecutionEventBusManager`: when
 * `DefaultRequestHandler` asks for a task's event bus (before the executor starts), an admitted
 * request (and any request on a task holding leases) gets the bus wrapped: the tracker sees what
 * is published through that bus and when its flow finishes. Task leases are bound to the task and
 * released on its first terminal state (or interrupted state, by default), when the flow
 * finishes, or when the bus is cleaned up; the first event tells deduplication which task the
 * message created, or the Message it was answered with (and the SDK scope it was answered in). A
 * custom bus manager must hand out, and finish, the bus it is given back.
 * Structural types only: no SDK import.
 */

import type { LeaseRef } from '../core/rejection.js';
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
 * Thrown into the SDK (which then fails the request, before the executor starts) when an
 * admitted message's pending record in a shared store lapsed before its task began: a copy on
 * another replica may have taken the message over, so this one must not run it.
 *
 * @example
 * ```ts
 * if (error instanceof PendingRecordLostError) console.log('not started; the caller retries');
 * ```
 */
export class PendingRecordLostError extends Error {
  override readonly name = 'PendingRecordLostError';

  constructor(taskId: string) {
    super(
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
export class AdmissionEndedError extends Error {
  override readonly name = 'AdmissionEndedError';

  constructor(taskId: string) {
    super(
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
  /** The latest bus handed out for the task (so `getByTaskId` callers are observed too). */
  bus: TrackedBus | undefined;
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
 * The bus handed to the SDK for an admitted request: the SDK's own bus, with every call passed
 * through, and each published event and the end of the flow seen by the tracker first. Seeing
 * events this way costs one object per request instead of two listeners on the SDK's
 * `EventTarget`.
 */
class TrackedBus implements EventBusLike {
  constructor(
    readonly inner: EventBusLike,
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

  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  publish(event: any): void {
    this.tracker.observe(this, event as AgentEventLike);
    this.inner.publish(event);
  }

  finished(): void {
    this.tracker.observeFinished(this);
    this.inner.finished();
  }

  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  on(eventName: 'event' | 'finished', listener: (event: any) => void): this {
    this.inner.on(eventName, listener);
    return this;
  }

  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  off(eventName: 'event' | 'finished', listener: (event: any) => void): this {
    this.inner.off(eventName, listener);
    return this;
  }

  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  once(eventName: 'event' | 'finished', listener: (event: any) => void): this {
    if (this.inner.once !== undefined) this.inner.once(eventName, listener);
    else {
      // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
      const wrapped = (event: any) => {
        this.inner.off(eventName, wrapped);
        listener(event);
      };
      this.inner.on(eventName, wrapped);
    }
    return this;
  }

  removeAllListeners(eventName?: 'event' | 'finished'): this {
    this.inner.removeAllListeners?.(eventName);
    return this;
  }
}

/**
 * Binds admissions to tasks and releases task leases when tasks end. Created by `createLimiter`;
 * reached through `limiter.trackTasks(manager)`.
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
   * Wraps a bus manager: same behaviour; the bus of an admitted request is handed out wrapped
   * (binding its leases and deduplication entry to the task), every other call goes through.
   *
   * @example
   * ```ts
   * new DefaultRequestHandler(card, store, executor, tracker.wrap(new DefaultExecutionEventBusManager()));
   * ```
   */
  wrap<M extends EventBusManagerLike>(inner: M): M {
    const wrapper: EventBusManagerLike & { settleByTaskId?: unknown } = {
      createOrGetByTaskId: (taskId, context) => {
        const ticketId = ticketIdOf(context, this.header);
        const ticket = ticketId === undefined ? undefined : this.options.ticketOf(ticketId);
        // The adapter set this ticket's id on the request; it is gone once the ticket ended.
        if (ticketId !== undefined && ticket === undefined) throw new AdmissionEndedError(taskId);
        if (ticket !== undefined && !ticket.bound && ticket.mayStart?.() === false) {
          // The SDK calls this right before it starts the executor: refusing here is the last
          // point where a message that may now run elsewhere is kept from running twice.
          throw new PendingRecordLostError(taskId);
        }
        const bus = inner.createOrGetByTaskId(taskId, context);
        if (ticket !== undefined && !ticket.bound) return this.bind(taskId, bus, ticket, context);
        // A task holding leases is watched whoever drives it (a request with no ticket too).
        const record = this.records.size === 0 ? undefined : this.records.get(taskId);
        if (record === undefined) return bus;
        record.bus = new TrackedBus(bus, this, taskId, undefined);
        return record.bus;
      },
      getByTaskId: (taskId, context) => {
        const bus = inner.getByTaskId(taskId, context);
        const tracked = bus === undefined ? undefined : this.records.get(taskId)?.bus;
        return tracked !== undefined && tracked.inner === bus ? tracked : bus;
      },
      cleanupByTaskId: (taskId, context) => {
        inner.cleanupByTaskId(taskId, context);
        this.end(taskId, undefined);
      },
    };
    const settle = (inner as { settleByTaskId?: (...args: unknown[]) => boolean }).settleByTaskId;
    if (typeof settle === 'function') {
      wrapper.settleByTaskId = (...args: unknown[]) => settle.apply(inner, args);
    }
    return wrapper as unknown as M;
  }

  private bind(
    taskId: string,
    bus: EventBusLike,
    ticket: TrackedTicket,
    context: unknown,
  ): TrackedBus {
    const tracked = new TrackedBus(bus, this, taskId, ticket, context);
    const leases = ticket.takeTaskLeases();
    let record = this.records.size === 0 ? undefined : this.records.get(taskId);
    if (leases.length > 0) {
      if (record === undefined) {
        record = { leases, interrupted: false, interruptedAtMs: 0, bus: tracked };
        this.records.set(taskId, record);
      } else record.leases.push(...leases);
    }
    if (record !== undefined) {
      record.interrupted = false;
      record.bus = tracked;
    }
    return tracked;
  }

  /** An event published on a tracked bus (before the SDK sees it). @internal */
  observe(bus: TrackedBus, event: AgentEventLike): void {
    const ticket = bus.pending;
    if (ticket !== undefined) {
      bus.pending = undefined;
      const context = bus.context;
      bus.context = undefined;
      if (event.kind !== 'message') ticket.settleDedup(bus.taskId);
      else ticket.settleDedup(undefined, { message: event.data, ...answerScopeOf(context) });
    }
    if (this.records.size === 0) return;
    const record = this.records.get(bus.taskId);
    if (record === undefined) return;
    const state = event.kind === 'message' ? undefined : event.data?.status?.state;
    if (state === undefined) return;
    if (TERMINAL_TASK_STATES.has(state)) {
      this.end(bus.taskId, record);
    } else if (INTERRUPTED_TASK_STATES.has(state)) {
      record.interrupted = true;
      record.interruptedAtMs = this.options.nowMs();
      if (this.options.releaseOnInterrupted) this.end(bus.taskId, record);
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
  observeFinished(bus: TrackedBus): void {
    const record = this.records.size === 0 ? undefined : this.records.get(bus.taskId);
    const keep = record?.interrupted === true && !this.options.releaseOnInterrupted;
    const ticket = bus.pending;
    if (ticket !== undefined) {
      // Finished before any event: no task, unless it is one kept waiting on its caller.
      bus.pending = undefined;
      bus.context = undefined;
      ticket.settleDedup(keep ? bus.taskId : undefined);
    }
    if (!keep) this.end(bus.taskId, record);
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
    record.bus = undefined;
  }
}
