/**
 * @module task-lease-tracker
 * Ties admissions to the SDK's tasks through its `ExecutionEventBusManager`: when
 * `DefaultRequestHandler` creates a task's event bus (before the executor starts), the admission's
 * task leases are bound to that task and released on its first terminal state (or interrupted
 * state, by default), when the bus finishes, or when it is cleaned up. The same events tell
 * deduplication which task a message created. Structural types only: no SDK import.
 */

import type { LeaseRef } from '../core/rejection.js';

/**
 * An agent event as the SDK's event bus carries it (`AgentExecutionEvent`), reduced to what the
 * tracker reads.
 *
 * @example
 * ```ts
 * const e: AgentEventLike = { kind: 'statusUpdate', data: { taskId: 't', status: { state: 3 } } };
 * ```
 */
export interface AgentEventLike {
  readonly kind: string;
  readonly data?: { readonly status?: { readonly state?: number } | undefined } | undefined;
}

/**
 * The SDK's `ExecutionEventBus`, structurally.
 *
 * @example
 * ```ts
 * bus.on('event', (e) => console.log(e.kind));
 * ```
 */
export interface EventBusLike {
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's listener unions are not expressible structurally
  on(eventName: 'event' | 'finished', listener: (event: any) => void): unknown;
}

/**
 * The SDK's `ExecutionEventBusManager`, structurally (`DefaultExecutionEventBusManager` fits).
 *
 * @example
 * ```ts
 * const manager: EventBusManagerLike = new DefaultExecutionEventBusManager();
 * ```
 */
export interface EventBusManagerLike {
  createOrGetByTaskId(taskId: string, context?: unknown): EventBusLike;
  getByTaskId(taskId: string, context?: unknown): EventBusLike | undefined;
  cleanupByTaskId(taskId: string, context?: unknown): void;
}

/**
 * A2A `TaskState` numbers (proto enum) that end a task.
 *
 * @example
 * ```ts
 * TERMINAL_TASK_STATES.has(4); // true (TASK_STATE_FAILED)
 * ```
 */
export const TERMINAL_TASK_STATES: ReadonlySet<number> = new Set([3, 4, 5, 7]);

/**
 * A2A `TaskState` numbers where a task waits on its caller (INPUT_REQUIRED, AUTH_REQUIRED).
 *
 * @example
 * ```ts
 * INTERRUPTED_TASK_STATES.has(6); // true (TASK_STATE_INPUT_REQUIRED)
 * ```
 */
export const INTERRUPTED_TASK_STATES: ReadonlySet<number> = new Set([6, 8]);

/** What the tracker needs from an admission ticket. */
interface TrackedTicket {
  readonly bound: boolean;
  takeTaskLeases(): LeaseRef[];
  settleDedup(taskId: string | undefined): void;
}

interface TaskRecord {
  leases: LeaseRef[];
  interrupted: boolean;
  /** When the task entered an interrupted state (kept leases stop being renewed), ms. */
  interruptedAtMs: number;
  /** Tickets whose dedup entry waits for the first event. */
  pending: TrackedTicket[];
}

/**
 * Options of {@link TaskLeaseTracker}.
 *
 * @example
 * ```ts
 * new TaskLeaseTracker({ releaseOnInterrupted: true, release: (l) => store.releaseSync(l), ticketOf: (id) => tickets.get(id) });
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

function ticketIdOf(context: unknown, header: string): string | undefined {
  const state = (context as { state?: { get?: (key: string) => unknown } } | undefined)?.state;
  const headers = typeof state?.get === 'function' ? state.get('headers') : undefined;
  if (headers === null || typeof headers !== 'object') return undefined;
  const value = (headers as Record<string, unknown>)[header];
  return typeof value === 'string' ? value : undefined;
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
  private readonly records = new Map<string, TaskRecord>();
  private readonly watched = new WeakSet<object>();

  constructor(
    private readonly options: TaskLeaseTrackerOptions,
    private readonly header = 'x-a2a-ratelimit-ticket',
  ) {}

  /** Tasks with leases or pending dedup entries. */
  size(): number {
    return this.records.size;
  }

  /** Leases of live, non-interrupted tasks (to renew). */
  liveLeases(): LeaseRef[] {
    const out: LeaseRef[] = [];
    for (const r of this.records.values()) if (!r.interrupted) out.push(...r.leases);
    return out;
  }

  /**
   * Wraps a bus manager: same behaviour, plus binding and release.
   *
   * @example
   * ```ts
   * new DefaultRequestHandler(card, store, executor, tracker.wrap(new DefaultExecutionEventBusManager()));
   * ```
   */
  wrap<M extends EventBusManagerLike>(inner: M): M {
    const wrapper: EventBusManagerLike & { settleByTaskId?: unknown } = {
      createOrGetByTaskId: (taskId, context) => {
        const bus = inner.createOrGetByTaskId(taskId, context);
        const ticketId = ticketIdOf(context, this.header);
        const ticket = ticketId === undefined ? undefined : this.options.ticketOf(ticketId);
        if (ticket !== undefined && !ticket.bound) this.bind(taskId, bus, ticket);
        return bus;
      },
      getByTaskId: (taskId, context) => inner.getByTaskId(taskId, context),
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

  private bind(taskId: string, bus: EventBusLike, ticket: TrackedTicket): void {
    let record = this.records.get(taskId);
    if (record === undefined) {
      record = { leases: [], interrupted: false, interruptedAtMs: 0, pending: [] };
      this.records.set(taskId, record);
    }
    const leases = ticket.takeTaskLeases();
    if (leases.length > 0) record.leases.push(...leases);
    record.interrupted = false;
    record.pending.push(ticket);
    if (!this.watched.has(bus as object)) {
      this.watched.add(bus as object);
      bus.on('event', (event: AgentEventLike) => this.onEvent(taskId, event));
      bus.on('finished', () => this.finished(taskId));
    }
  }

  private onEvent(taskId: string, event: AgentEventLike): void {
    const record = this.records.get(taskId);
    if (record === undefined) return;
    if (record.pending.length > 0) {
      const created = event.kind !== 'message';
      for (const t of record.pending) t.settleDedup(created ? taskId : undefined);
      record.pending = [];
    }
    const state = event.kind === 'message' ? undefined : event.data?.status?.state;
    if (state === undefined) return;
    if (TERMINAL_TASK_STATES.has(state)) {
      this.end(taskId, record);
    } else if (INTERRUPTED_TASK_STATES.has(state)) {
      record.interrupted = true;
      record.interruptedAtMs = this.options.nowMs();
      if (this.options.releaseOnInterrupted) this.end(taskId, record);
    } else {
      record.interrupted = false;
    }
  }

  /**
   * The execution flow ended. A task left waiting on its caller keeps its leases when
   * `releaseOnInterrupted` is off; they are no longer renewed and expire by TTL unless the task
   * resumes (a follow-up message binds to the same record).
   */
  private finished(taskId: string): void {
    const record = this.records.get(taskId);
    if (record?.interrupted === true && !this.options.releaseOnInterrupted) {
      for (const t of record.pending) t.settleDedup(taskId);
      record.pending = [];
      return;
    }
    this.end(taskId, record);
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
    const record = known ?? this.records.get(taskId);
    if (record === undefined) return;
    this.records.delete(taskId);
    for (const t of record.pending) t.settleDedup(undefined);
    record.pending = [];
    this.options.release(record.leases);
    record.leases = [];
  }
}
