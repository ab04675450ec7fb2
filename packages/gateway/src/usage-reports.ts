/**
 * @module usage-reports
 * `UsageReports`: usage charged from the agent's own reports at a configured path, through
 * `limiter.usageOf`.
 */

import type { Limiter } from 'a2a-ratelimit/server';
import { taskStateNumber } from './task-sightings.js';

/** Task states that end a run: terminal (3, 4, 5, 7) and interrupted (6, 8). */
const FINAL_STATES: ReadonlySet<number> = new Set([3, 4, 5, 6, 7, 8]);

/** Task ids owing a report kept at most (the oldest go first: their reservation stands). */
const MAX_OWING = 100_000;

/**
 * The segments of a dotted path, or a `RangeError` naming what is wrong with it.
 *
 * @example
 * ```ts
 * parseUsagePath('metadata.usage.totalTokens'); // ['metadata', 'usage', 'totalTokens']
 * ```
 */
export function parseUsagePath(path: string): readonly string[] {
  const segments = path.split('.');
  if (path === '' || segments.some((s) => s === '')) {
    throw new RangeError(
      `usage path must be dotted field names, e.g. metadata.usage.totalTokens, got "${path}"`,
    );
  }
  return segments;
}

/**
 * The value at `segments` inside `object` (own fields of plain objects only), or undefined.
 *
 * @example
 * ```ts
 * valueAtPath({ metadata: { usage: { totalTokens: 4000 } } }, ['metadata', 'usage', 'totalTokens']); // 4000
 * ```
 */
export function valueAtPath(object: unknown, segments: readonly string[]): unknown {
  let at: unknown = object;
  for (const segment of segments) {
    if (at === null || typeof at !== 'object' || Array.isArray(at)) return undefined;
    if (!Object.hasOwn(at, segment)) return undefined;
    at = (at as Record<string, unknown>)[segment];
  }
  return at;
}

/** Why a report was ignored. */
export interface IgnoredUsageReport {
  readonly taskId: string;
  /** The value found at the path (not a finite number ≥ 0). */
  readonly value: unknown;
}

/**
 * Options of {@link UsageReports}.
 *
 * @example
 * ```ts
 * const options: UsageReportsOptions = { limiter, path: 'metadata.usage.totalTokens' };
 * ```
 */
export interface UsageReportsOptions {
  /** Charges the reports (`limiter.usageOf`); its usage policies (`unit`) are the budgets. */
  readonly limiter: Limiter;
  /** Dotted path into the final Task / status update / Message (a function when reloaded). */
  readonly path: string | (() => string);
  /** Called for each report that is not a finite number ≥ 0 (for a metric). */
  readonly onIgnored?: (report: IgnoredUsageReport) => void;
  /** Where a failed charge (a store error) is told. @defaultValue stderr */
  readonly log?: (line: string) => void;
}

/**
 * Reads the agent's usage reports and charges them. The gateway calls {@link admitted} when an
 * admission is bound to a task and {@link see} with every Task or status update object of that
 * task seen passing through (HTTP answers, stream events, polls, decoded gRPC messages alike).
 * The number at the path of a task's final object (a Task or status update in a terminal or
 * interrupted state, or a Message answer) is charged once per admission, through
 * `limiter.usageOf`, to the caller whose admission started the run (the first report settles its
 * reservation). A fraction is charged as the next whole unit; a report that is not a finite
 * number ≥ 0 is ignored and counted. No I/O of its own.
 *
 * @example
 * ```ts
 * const usage = new UsageReports({ limiter, path: 'metadata.usage.totalTokens' });
 * usage.admitted('task-1');
 * usage.see('task-1', { id: 'task-1', status: { state: 'TASK_STATE_COMPLETED' }, metadata: { usage: { totalTokens: 4000 } } });
 * ```
 */
export class UsageReports {
  /** Tasks whose current run was admitted here and has not reported yet (insertion order). */
  private readonly owing = new Set<string>();
  private ignoredCount = 0;
  private chargedCount = 0;
  private lastPath = '';
  private segments: readonly string[] = [];

  constructor(private readonly options: UsageReportsOptions) {
    this.pathSegments();
  }

  /** Reports ignored (not a finite number ≥ 0) since the start. */
  ignored(): number {
    return this.ignoredCount;
  }

  /** Reports charged since the start. */
  charged(): number {
    return this.chargedCount;
  }

  /** Whether task `taskId` has a run admitted here that has not reported yet. */
  owes(taskId: string): boolean {
    return this.owing.has(taskId);
  }

  /** An admission was bound to task `taskId`: its run's report is awaited. */
  admitted(taskId: string): void {
    this.owing.delete(taskId);
    this.owing.add(taskId);
    if (this.owing.size > MAX_OWING) {
      const oldest = this.owing.values().next().value;
      if (oldest !== undefined) this.owing.delete(oldest);
    }
  }

  /**
   * A Task or status update of task `taskId` was seen (its A2A JSON form, or a decoded message of
   * the same shape). When it is final (terminal or interrupted state) and the task's run owes a
   * report, the value at the path is charged — or, when it is not a finite number ≥ 0, ignored
   * and counted; a final object with nothing at the path leaves the reservation (the
   * `estimate`) standing. Returns whether a report was charged.
   */
  see(taskId: string, object: unknown): boolean {
    if (!this.owing.has(taskId)) return false;
    const status = (object as { status?: { state?: unknown } } | null)?.status;
    const state = taskStateNumber(status?.state);
    if (state === undefined || !FINAL_STATES.has(state)) return false;
    return this.charge(taskId, object);
  }

  /**
   * A Message answered an admission (no task): bound under `id` (the gateway's
   * `message:<ticket>`), its report charged at once when present.
   */
  seeMessage(id: string, message: unknown): boolean {
    if (!this.owing.has(id)) return false;
    return this.charge(id, message);
  }

  private pathSegments(): readonly string[] {
    const path = typeof this.options.path === 'function' ? this.options.path() : this.options.path;
    if (path !== this.lastPath) {
      this.segments = parseUsagePath(path);
      this.lastPath = path;
    }
    return this.segments;
  }

  private charge(taskId: string, object: unknown): boolean {
    const value = valueAtPath(object, this.pathSegments());
    // This run has now been seen to its end: its report (if any) is read once.
    this.owing.delete(taskId);
    if (value === undefined) return false;
    // A fraction of a unit is charged as a whole one (the budgets count whole units).
    const units = typeof value === 'number' ? Math.ceil(value) : Number.NaN;
    if (!Number.isSafeInteger(units) || units < 0) {
      this.ignoredCount++;
      this.options.onIgnored?.({ taskId, value });
      return false;
    }
    this.chargedCount++;
    const log = this.options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    this.options.limiter
      .usageOf(taskId)
      .report(units)
      .catch((error: unknown) => {
        log(
          `a2a-ratelimit gateway: the usage of task ${taskId} (${units}) was not charged: ${(error as Error).message}`,
        );
      });
    return true;
  }
}
