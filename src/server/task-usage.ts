/**
 * @module task-usage
 * Usage reported by a task, charged to the caller that started it, by the identity kept from its
 * admission. Structural SDK types: no SDK import.
 */

import { BrandedError, isBrandedError } from '../core/branded-error.js';
import type { RequestIdentity } from '../core/policy.js';
import type { EventBusManagerLike } from '../core/task-events.js';
import { taskTapOf } from '../core/task-tap.js';
import { ticketIdOf } from './task-lease-tracker.js';

/**
 * How long a task's admitted identity is kept after the SDK last asked for the task's event bus,
 * ms (one hour).
 */
export const TASK_USAGE_TTL_MS = 3_600_000;

/** Tasks whose identity is kept at most; the oldest go first. */
const MAX_TASKS = 100_000;

/** Unsettled admissions kept per task; past it the oldest keeps its reservation for good. */
const MAX_UNSETTLED = 8;

/**
 * A task as an executor knows it: its id, and the SDK's `RequestContext` fields the limiter can
 * read the admission from (`context`, the `ServerCallContext`). The SDK's `RequestContext` fits.
 *
 * @example
 * ```ts
 * const task: TaskRef = requestContext; // in AgentExecutor.execute(requestContext, bus)
 * ```
 */
export interface TaskRef {
  readonly taskId: string;
  readonly context?: unknown;
}

/**
 * Reports the usage of one task to the usage policies (`unit`) of the caller that started it.
 *
 * @example
 * ```ts
 * await limiter.usageOf(requestContext).report(4_000); // 4,000 tokens
 * ```
 */
export interface TaskUsageReporter {
  readonly taskId: string;
  /** The admitted identity charged, or undefined when no admission is known for the task. */
  readonly request: RequestIdentity | undefined;
  /**
   * Charges `units` (a whole number ≥ 0) to the caller's usage budgets, possibly into debt.
   * Rejects with {@link UnknownTaskUsageError} when no admission is known for the task.
   */
  report(units: number): Promise<void>;
}

/**
 * Stable `code` strings of the usage reporter's errors.
 *
 * @example
 * ```ts
 * if (e.code === TASK_USAGE_ERROR_CODES.unknownTask) console.log('not admitted here');
 * ```
 */
export const TASK_USAGE_ERROR_CODES = { unknownTask: 'ERR_A2A_USAGE_UNKNOWN_TASK' } as const;

/**
 * Thrown (as a rejection of `report`) when usage is reported for a task whose admission the
 * limiter does not know: the task was not started through this limiter's `trackTasks`-wrapped
 * bus manager, or its identity expired (`TASK_USAGE_TTL_MS` after its run ended).
 *
 * @example
 * ```ts
 * reporter.report(100).catch((e) => { if (e instanceof UnknownTaskUsageError) log(e.taskId); });
 * ```
 */
export class UnknownTaskUsageError extends BrandedError<typeof TASK_USAGE_ERROR_CODES.unknownTask> {
  declare readonly name: 'UnknownTaskUsageError';
  /** Brand checked by `instanceof` (across copies of this package). */
  declare readonly isUnknownTaskUsageError: true;
  readonly taskId: string;

  constructor(taskId: string) {
    super(
      'UnknownTaskUsageError',
      TASK_USAGE_ERROR_CODES.unknownTask,
      `a2a-ratelimit: no admission is known for task ${taskId} (is the SDK's event-bus manager wrapped by limiter.trackTasks?); its usage was not charged`,
    );
    this.taskId = taskId;
  }

  /**
   * `instanceof` recognises a UnknownTaskUsageError of any installed copy of this package: it checks the brand
   * (`isUnknownTaskUsageError: true`, an own property), not the prototype chain.
   */
  static override [Symbol.hasInstance](value: unknown): value is UnknownTaskUsageError {
    return isUnknownTaskUsageError(value);
  }
}

/**
 * Whether `error` is an {@link UnknownTaskUsageError} (by brand: works across duplicate installs).
 *
 * @example
 * ```ts
 * if (isUnknownTaskUsageError(e)) console.log(e.taskId);
 * ```
 */
export function isUnknownTaskUsageError(error: unknown): error is UnknownTaskUsageError {
  return isBrandedError(error, 'UnknownTaskUsageError');
}

/**
 * What {@link TaskUsageBook} needs from the limiter.
 *
 * @example
 * ```ts
 * const options: TaskUsageBookOptions = { ticketHeader: TICKET_HEADER, admittedBy: (id) => tickets.get(id)?.request, charge: limiter.reportUsage, nowMs: () => clock.nowMs() };
 * ```
 */
export interface TaskUsageBookOptions {
  /** The header (in `ServerCallContext.state.get('headers')`) carrying the admission's ticket id. */
  readonly ticketHeader: string;
  /** The identity of the open admission with this ticket id. */
  readonly admittedBy: (ticketId: string) => RequestIdentity | undefined;
  /**
   * Charges usage to a request's usage policies (`limiter.reportUsage`); with `settle`, the
   * report settles the reservation of the admission that ran the task.
   */
  readonly charge: (
    request: RequestIdentity,
    units: number,
    options: { readonly settle: boolean },
  ) => Promise<void>;
  /** Current time, ms. */
  readonly nowMs: () => number;
}

/**
 * One identity shared by every kept task admitted with it: a task keeps a reference, never its
 * own copy, so a caller's name (however long) is kept once per identity, not once per task.
 */
interface SharedIdentity {
  readonly request: RequestIdentity;
  /** Its key in the book's table of shared identities. */
  readonly key: string;
  /** Kept tasks referring to it; dropped from the table at 0. */
  refs: number;
}

/** An admission into a task whose reservation no report has settled yet. */
interface Unsettled {
  readonly identity: SharedIdentity;
  /** Its ticket id, when known: the SDK asking twice under one admission adds it once. */
  readonly ticketId: string | undefined;
}

interface KeptIdentity {
  readonly identity: SharedIdentity;
  /**
   * The admissions that ran the task and whose reservations no report has settled yet, oldest
   * first (usually one; at most {@link MAX_UNSETTLED}: older ones keep their reservations).
   */
  readonly unsettled: Unsettled[];
  /** Infinity while the task's bus is live (the SDK has not cleaned it up): never forgotten then. */
  expiresAtMs: number;
}

/**
 * The admitted identity of each task, by task id: recorded when the SDK asks for the task's
 * event bus under an open admission, kept for `TASK_USAGE_TTL_MS` after the last such
 * request (at most 100,000 tasks, the oldest dropped first).
 *
 * @example
 * ```ts
 * const book = new TaskUsageBook({ ticketHeader, admittedBy, charge, nowMs });
 * const manager = book.wrap(tracker.wrap(new DefaultExecutionEventBusManager()));
 * await book.reporterOf('task-1').report(4_000);
 * ```
 */
export class TaskUsageBook {
  private readonly tasks = new Map<string, KeptIdentity>();
  /** The identities kept tasks refer to, by their fields: one copy per identity. */
  private readonly identities = new Map<string, SharedIdentity>();

  constructor(private readonly options: TaskUsageBookOptions) {}

  /** Tasks whose identity is kept. */
  size(): number {
    return this.tasks.size;
  }

  /** Distinct identities the kept tasks share. */
  identityCount(): number {
    return this.identities.size;
  }

  /**
   * Subscribes to `manager`'s task tap (made around it unless it is one): creating (or resuming) a
   * task's bus under an open admission records that admission's identity for the task.
   */
  wrap<M extends EventBusManagerLike>(manager: M): M {
    const tap = taskTapOf(manager);
    tap.subscribe(this);
    return tap as unknown as M;
  }

  /** The SDK asks for a task's bus: under an open admission, its identity is kept. @internal */
  open(taskId: string, context: unknown): (() => void) | undefined {
    const ticketId = ticketIdOf(context, this.options.ticketHeader);
    const request = ticketId === undefined ? undefined : this.options.admittedBy(ticketId);
    if (request === undefined) return undefined;
    return () => this.remember(taskId, request, { ticketId });
  }

  /** The task's run is over: its identity is kept `TASK_USAGE_TTL_MS` from now. @internal */
  cleanedUp(taskId: string): void {
    const kept = this.tasks.get(taskId);
    if (kept !== undefined) kept.expiresAtMs = this.options.nowMs() + TASK_USAGE_TTL_MS;
  }

  /**
   * Keeps `request` as the identity of `taskId` from now on, for as long as the task's bus is live
   * and `TASK_USAGE_TTL_MS` after. Past 100,000 tasks the oldest finished one goes; a live
   * task's identity is never dropped (it costs less than the bus the SDK itself keeps for it).
   */
  remember(
    taskId: string,
    request: RequestIdentity,
    {
      live = true,
      ticketId,
    }: { readonly live?: boolean; readonly ticketId?: string | undefined } = {},
  ): void {
    const nowMs = this.options.nowMs();
    // Shared first, so a task admitted again with the identity it has keeps that one copy.
    const identity = this.share(request);
    // Admissions into the task whose runs have not reported yet stay settleable.
    const unsettled = this.tasks.get(taskId)?.unsettled ?? [];
    if (ticketId === undefined || !unsettled.some((u) => u.ticketId === ticketId)) {
      unsettled.push({ identity, ticketId });
      if (unsettled.length > MAX_UNSETTLED) unsettled.shift();
    }
    this.forget(taskId);
    for (const [id, kept] of this.tasks) {
      if (kept.expiresAtMs > nowMs) break;
      this.forget(id);
    }
    if (this.tasks.size >= MAX_TASKS) this.evictOne();
    this.tasks.set(taskId, {
      identity,
      unsettled,
      expiresAtMs: live ? Number.POSITIVE_INFINITY : nowMs + TASK_USAGE_TTL_MS,
    });
  }

  /** The shared copy of `request`'s identity, one more task referring to it. */
  private share(request: RequestIdentity): SharedIdentity {
    const key = identityKeyOf(request);
    let shared = this.identities.get(key);
    if (shared === undefined) {
      shared = { request: identityOf(request), key, refs: 0 };
      this.identities.set(key, shared);
    }
    shared.refs++;
    return shared;
  }

  /** Drops a task's kept identity; its shared copy goes with the last task referring to it. */
  private forget(taskId: string): void {
    const kept = this.tasks.get(taskId);
    if (kept === undefined) return;
    this.tasks.delete(taskId);
    const shared = kept.identity;
    if (--shared.refs === 0) this.identities.delete(shared.key);
  }

  /** Drops the oldest finished task's identity, if there is one. */
  private evictOne(): void {
    for (const [id, kept] of this.tasks) {
      if (kept.expiresAtMs !== Number.POSITIVE_INFINITY) {
        this.forget(id);
        return;
      }
    }
  }

  /**
   * The reporter of a task: the identity is resolved now — from the open admission of
   * `task.context` (the run reporting), else the one kept for the task id — and kept by the
   * reporter, so its reports count whenever they come.
   */
  reporterOf(task: string | TaskRef): TaskUsageReporter {
    const taskId = typeof task === 'string' ? task : task.taskId;
    // The executor's own RequestContext names the admission this run came from: it wins over
    // the identity kept for the task, which is the one of the *latest* message into the task
    // (another caller's follow-up must not make this run's usage land on that caller).
    let request: RequestIdentity | undefined;
    if (typeof task !== 'string') {
      const ticketId = ticketIdOf(task.context, this.options.ticketHeader);
      const admitted = ticketId === undefined ? undefined : this.options.admittedBy(ticketId);
      request = admitted === undefined ? undefined : identityOf(admitted);
    }
    if (request === undefined) {
      const kept = this.tasks.get(taskId);
      request =
        kept !== undefined && kept.expiresAtMs > this.options.nowMs()
          ? kept.identity.request
          : undefined;
    } else if (this.tasks.get(taskId) === undefined) {
      this.remember(taskId, request, { live: false });
    }
    const charge = this.options.charge;
    return {
      taskId,
      request,
      report: (units) => {
        if (request === undefined) return Promise.reject(new UnknownTaskUsageError(taskId));
        const kept = this.tasks.get(taskId);
        // The first report of an admission's run settles its reservation (its estimate, or
        // the whole budget); later reports charge in full.
        let settle = false;
        if (kept !== undefined && Number.isSafeInteger(units) && units >= 0) {
          const key = identityKeyOf(request);
          const at = kept.unsettled.findIndex((u) => u.identity.key === key);
          if (at >= 0) {
            kept.unsettled.splice(at, 1);
            settle = true;
          }
        }
        return charge(request, units, { settle });
      },
    };
  }
}

/**
 * The key of an identity's shared copy: its fields, JSON-quoted so no caller, tenant or skill
 * name can run into the next field.
 */
function identityKeyOf(r: RequestIdentity): string {
  return JSON.stringify([r.caller, r.method, r.tenant ?? null, r.skill ?? null, r.tier ?? null]);
}

/** The identity fields a usage charge needs (not the binding or the message id). */
function identityOf(r: RequestIdentity): RequestIdentity {
  return {
    caller: r.caller,
    method: r.method,
    ...(r.tenant === undefined ? {} : { tenant: r.tenant }),
    ...(r.skill === undefined ? {} : { skill: r.skill }),
    ...(r.tier === undefined ? {} : { tier: r.tier }),
  };
}
