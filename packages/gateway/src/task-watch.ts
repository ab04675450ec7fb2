/**
 * @module task-watch
 * `TaskWatch`: the gateway's side of `limiter.trackTasks`, telling the limiter what became of the
 * admissions it forwarded.
 */

import type { A2AMethod } from 'a2a-ratelimit';
import type { EventBusManagerLike, Limiter } from 'a2a-ratelimit/server';
import { TICKET_HEADER } from 'a2a-ratelimit/server';
import type { UsageReports } from './usage-reports.js';

/** One task's event bus, as the limiter's bus manager hands it out. */
type EventBusLike = ReturnType<EventBusManagerLike['createOrGetByTaskId']>;

/** An event bus with nothing listening: the limiter's wrapper sees what is published on it. */
class QuietBus implements EventBusLike {
  publish(): void {}
  finished(): void {}
  on(): this {
    return this;
  }
  off(): this {
    return this;
  }
}

/** The bus manager handed to `limiter.trackTasks`: one quiet bus per task id. */
class QuietBuses implements EventBusManagerLike {
  readonly buses = new Map<string, QuietBus>();
  createOrGetByTaskId(taskId: string): EventBusLike {
    let bus = this.buses.get(taskId);
    if (bus === undefined) {
      bus = new QuietBus();
      this.buses.set(taskId, bus);
    }
    return bus;
  }
  getByTaskId(taskId: string): EventBusLike | undefined {
    return this.buses.get(taskId);
  }
  cleanupByTaskId(taskId: string): void {
    this.buses.delete(taskId);
  }
}

/**
 * The ticket an admission of `method` binds to the task its answer shows: a message send's only
 * (the SDK makes a task's bus for a send alone). A GetTask, CancelTask or SubscribeToTask answer
 * bound its admission too, and a task's usage is charged to the last admission bound to it: a
 * poll of a running task made its report go to the poll (a method no usage policy counts).
 *
 * @example
 * ```ts
 * bindingTicket('GetTask', ticket); // undefined
 * ```
 */
export function bindingTicket(
  method: A2AMethod,
  ticket: { readonly id: string; readonly needsEnd: boolean },
): string | undefined {
  const send = method === 'SendMessage' || method === 'SendStreamingMessage';
  return send && ticket.needsEnd ? ticket.id : undefined;
}

/** The scope an admission was made in (a Message answer is kept with it). */
export interface WatchScope {
  /** The ticket bound to the task the answer shows ({@link bindingTicket}), if any. */
  readonly ticketId: string | undefined;
  readonly tenant: string | undefined;
  readonly caller: string;
}

/** Terminal A2A task states (COMPLETED, FAILED, CANCELED, REJECTED). */
const TERMINAL: ReadonlySet<number> = new Set([3, 4, 5, 7]);

/**
 * The gateway's side of `limiter.trackTasks`: it plays the SDK's event-bus manager, so leases and
 * deduplication work exactly as for an in-process agent. An answer showing task X binds the
 * admission's task leases and deduplication entry to X (or records the Message it was answered
 * with); each later state of X seen passing through (stream events, GetTask and CancelTask
 * answers, polls) is published on X's bus, and the first terminal state frees X's leases; giving
 * up on X (its upstream stopped answering) finishes its bus. With usage reports on, each binding
 * awaits its run's report, and each object seen is read for it, before X's end is told.
 *
 * @example
 * ```ts
 * const watch = new TaskWatch(limiter);
 * watch.task(scope, 'task-1', 2); // bound: its leases last until it ends
 * watch.task(undefined, 'task-1', 3); // completed: freed
 * ```
 */
export class TaskWatch {
  private readonly inner = new QuietBuses();
  private readonly manager: EventBusManagerLike;
  /** Buses the limiter handed back, per task id (its wrapper sees what is published). */
  private readonly buses = new Map<string, EventBusLike>();

  constructor(
    limiter: Limiter,
    private readonly usage?: UsageReports,
  ) {
    this.manager = limiter.trackTasks(this.inner);
  }

  /** Tasks being watched (bound and not yet ended). */
  size(): number {
    return this.buses.size;
  }

  /** Whether task `taskId` is being watched. */
  watching(taskId: string): boolean {
    return this.buses.has(taskId);
  }

  /**
   * Task `taskId` was seen in `state` (undefined: unknown). With `scope.ticketId` (the answer of
   * an admitted request) the admission is bound to it first. `object` (the Task or status update
   * seen) is read for the agent's usage report. Returns whether the task is still watched
   * afterwards (false once terminal, or when nothing holds it).
   */
  task(
    scope: WatchScope | undefined,
    taskId: string,
    state: number | undefined,
    object?: Record<string, unknown>,
  ): boolean {
    let bus = this.buses.get(taskId);
    if (scope?.ticketId !== undefined) {
      try {
        bus = this.manager.createOrGetByTaskId(taskId, contextOf(scope));
        this.buses.set(taskId, bus);
        this.usage?.admitted(taskId);
      } catch {
        // The admission already ended (its client left): nothing to bind.
      }
    }
    if (object !== undefined) this.usage?.see(taskId, object);
    if (bus === undefined) return false;
    bus.publish({ kind: 'task', data: { id: taskId, status: { state: state ?? 0 } } });
    if (state !== undefined && TERMINAL.has(state)) {
      this.finish(taskId);
      return false;
    }
    return true;
  }

  /** The admission was answered with a Message (no task): kept for copies when dedup keeps answers. */
  message(scope: WatchScope, message: Record<string, unknown>): void {
    if (scope.ticketId === undefined) return;
    const id = `message:${scope.ticketId}`;
    try {
      const bus = this.manager.createOrGetByTaskId(id, contextOf(scope));
      this.usage?.admitted(id);
      this.usage?.seeMessage(id, message);
      bus.publish({ kind: 'message', data: message });
      bus.finished();
    } catch {
      // The admission already ended.
    }
    // Through the limiter's wrapper, so it forgets what it kept for this id.
    this.manager.cleanupByTaskId(id);
  }

  /**
   * Stops watching `taskId`: its bus is finished and cleaned up through the limiter's wrapper, as
   * the SDK does once a run ends (its leases freed; the identity kept for usage reports then
   * lapses `TASK_USAGE_TTL_MS` later instead of being kept for good).
   */
  finish(taskId: string): void {
    const bus = this.buses.get(taskId);
    if (bus === undefined) return;
    this.buses.delete(taskId);
    bus.finished();
    // Through the limiter's wrapper (as the SDK cleans up): the task's kept usage identity starts
    // its expiry and leases kept for a task waiting on its caller are freed.
    this.manager.cleanupByTaskId(taskId);
  }

  /** Stops watching every task. */
  finishAll(): void {
    for (const taskId of [...this.buses.keys()]) this.finish(taskId);
  }
}

/** A call context shaped as the SDK's: headers with the ticket, tenant, user. */
function contextOf(scope: WatchScope): unknown {
  const headers = scope.ticketId === undefined ? {} : { [TICKET_HEADER]: scope.ticketId };
  return {
    state: new Map([['headers', headers]]),
    tenant: scope.tenant ?? '',
    user: { userName: scope.caller },
  };
}
