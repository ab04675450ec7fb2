/**
 * @module call-within-limits
 * `callWithinLimits`: a limit hit inside a task (a model provider's 429) retried as work of the
 * task.
 */

import { randomUUID } from 'node:crypto';
import { backoffDelayMs } from '../client/plan-retry.js';
import { type Sleep, systemSleep } from '../client/sleep.js';
import { BrandedError, isBrandedError } from '../core/branded-error.js';
import type { Clock } from '../core/clock.js';
import { systemClock } from '../platform/system-clock.js';
import { extractRetryHint, type RetryHint, type RetrySource } from '../wire/index.js';

/**
 * The SDK's `ExecutionEventBus`, as far as this helper uses it.
 *
 * @example
 * ```ts
 * const bus: StatusEventSink = { publish: (event) => console.log(event.kind) };
 * ```
 */
export interface StatusEventSink {
  // biome-ignore lint/suspicious/noExplicitAny: accepts the SDK's AgentExecutionEvent union without importing the SDK
  publish(event: any): void;
}

/**
 * A2A `TaskState` numbers this helper publishes.
 *
 * @example
 * ```ts
 * TASK_STATES.failed; // 4 (TASK_STATE_FAILED)
 * ```
 */
export const TASK_STATES = { working: 2, failed: 4 } as const;

/**
 * Options of {@link callWithinLimits}.
 *
 * @example
 * ```ts
 * const options: CallWithinLimitsOptions = { bus, taskId: ctx.taskId, contextId: ctx.contextId, label: 'model provider' };
 * ```
 */
export interface CallWithinLimitsOptions {
  /** The task's event bus. */
  readonly bus: StatusEventSink;
  readonly taskId: string;
  readonly contextId: string;
  /** What is being called, for status messages; default `upstream service`. */
  readonly label?: string;
  /** Attempts in total, including the first; default 5. */
  readonly maxAttempts?: number;
  /** Total budget from the first attempt, ms; default 300,000 (5 min). */
  readonly budgetMs?: number;
  /** Longest single wait, ms; a longer hinted delay gives up now; default 60,000. */
  readonly maxWaitMs?: number;
  /** Turns what the call threw into a retry source; default `{ kind: 'error', error }`. */
  readonly toRetrySource?: (thrown: unknown) => RetrySource;
  /** Cancels waiting (e.g. the task was canceled); the helper then rethrows the abort reason. */
  readonly signal?: AbortSignal;
  /** End the task FAILED when giving up; default true. */
  readonly failTaskOnGiveUp?: boolean;
  readonly clock?: Clock;
  readonly sleep?: Sleep;
  /** Uniform [0, 1) source for jitter and backoff; default `Math.random`. */
  readonly random?: () => number;
}

/**
 * Stable `code` strings of the executor helper's errors.
 *
 * @example
 * ```ts
 * if (e.code === EXECUTOR_ERROR_CODES.limitedCallFailed) return;
 * ```
 */
export const EXECUTOR_ERROR_CODES = { limitedCallFailed: 'ERR_A2A_LIMITED_CALL_FAILED' } as const;

/**
 * Thrown by {@link callWithinLimits} when it gave up; the task was already ended FAILED (unless
 * `failTaskOnGiveUp: false`). Carries the last hint and the last error. Recognise it with
 * `instanceof` (it checks a brand, so it works across duplicate installs) or its `code`.
 *
 * @example
 * ```ts
 * try { await callWithinLimits(call, options); } catch (e) { if (e instanceof LimitedCallFailedError) return; }
 * ```
 */
export class LimitedCallFailedError extends BrandedError<
  typeof EXECUTOR_ERROR_CODES.limitedCallFailed
> {
  declare readonly name: 'LimitedCallFailedError';
  /** Brand checked by `instanceof` (across copies of this package). */
  declare readonly isLimitedCallFailedError: true;
  /** What the last failure said about retrying. */
  readonly hint: RetryHint;
  /** Attempts made. */
  readonly attempts: number;

  constructor(message: string, hint: RetryHint, attempts: number, cause: unknown) {
    super('LimitedCallFailedError', EXECUTOR_ERROR_CODES.limitedCallFailed, message, { cause });
    this.hint = hint;
    this.attempts = attempts;
  }

  /**
   * `instanceof` recognises a LimitedCallFailedError of any installed copy of this package: it checks the brand
   * (`isLimitedCallFailedError: true`, an own property), not the prototype chain.
   */
  static override [Symbol.hasInstance](value: unknown): value is LimitedCallFailedError {
    return isLimitedCallFailedError(value);
  }
}

/**
 * Whether `error` is a {@link LimitedCallFailedError}, by its brand rather than `instanceof`, so
 * it holds across duplicate installs of this package.
 *
 * @example
 * ```ts
 * catch (e) { if (!isLimitedCallFailedError(e)) throw e; console.log(e.attempts, e.hint.delayMs); }
 * ```
 */
export function isLimitedCallFailedError(error: unknown): error is LimitedCallFailedError {
  return isBrandedError(error, 'LimitedCallFailedError');
}

function statusEvent(
  options: CallWithinLimitsOptions,
  state: number,
  text: string,
  nowMs: number,
): { kind: 'statusUpdate'; data: unknown } {
  return {
    kind: 'statusUpdate',
    data: {
      taskId: options.taskId,
      contextId: options.contextId,
      status: {
        state,
        message: {
          role: 2,
          messageId: randomUUID(),
          taskId: options.taskId,
          contextId: options.contextId,
          parts: [
            {
              content: { $case: 'text', value: text },
              mediaType: 'text/plain',
              filename: '',
              metadata: {},
            },
          ],
          metadata: {},
          extensions: [],
          referenceTaskIds: [],
        },
        timestamp: new Date(nowMs).toISOString(),
      },
      metadata: {},
    },
  };
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

function why(hint: RetryHint): string {
  const reason = hint.reason ?? (hint.status === undefined ? hint.kind : `status ${hint.status}`);
  return hint.policy === undefined ? reason : `${reason}, policy ${hint.policy}`;
}

/**
 * Runs `call`, retrying limited failures inside the task. A failure is retried when its hint is
 * quota, overload or transient-unknown (not `doNotRetry`): after the hinted delay plus jitter
 * uniform(0, 1 s), or full-jitter backoff when no delay was hinted. Before each wait a WORKING
 * status update says what it waits for and how long. It gives up — publishing a FAILED status
 * update that says why (so a stream always ends with a terminal event), then throwing
 * {@link LimitedCallFailedError} — when the failure is not retryable, attempts run out, the hinted
 * wait exceeds `maxWaitMs`, or it would not fit the budget.
 *
 * @example
 * ```ts
 * async execute(ctx, bus) {
 *   bus.publish(AgentEvent.task(initialTask));
 *   try {
 *     const answer = await callWithinLimits(() => model.generate(prompt), {
 *       bus, taskId: ctx.taskId, contextId: ctx.contextId, label: 'model provider',
 *       toRetrySource: (e) => ({ kind: 'http', status: e.status, headers: e.headers, body: e.body }),
 *     });
 *     bus.publish(completed(answer));
 *   } catch (e) {
 *     if (!(e instanceof LimitedCallFailedError)) throw e;
 *   } finally { bus.finished(); }
 * }
 * ```
 */
export async function callWithinLimits<T>(
  call: (attempt: number) => Promise<T>,
  options: CallWithinLimitsOptions,
): Promise<T> {
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? systemSleep;
  const random = options.random ?? Math.random;
  const label = options.label ?? 'upstream service';
  const maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? 5));
  const maxWaitMs = options.maxWaitMs ?? 60_000;
  const startMs = clock.nowMs();
  const deadlineMs = startMs + (options.budgetMs ?? 300_000);
  const toSource =
    options.toRetrySource ?? ((error: unknown) => ({ kind: 'error', error }) as const);

  const giveUp = (text: string, hint: RetryHint, attempts: number, cause: unknown): never => {
    if (options.failTaskOnGiveUp !== false) {
      options.bus.publish(statusEvent(options, TASK_STATES.failed, text, clock.nowMs()));
    }
    throw new LimitedCallFailedError(text, hint, attempts, cause);
  };

  for (let attempt = 1; ; attempt++) {
    try {
      return await call(attempt);
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      const nowMs = clock.nowMs();
      const hint = extractRetryHint(toSource(error), nowMs);
      const retryable =
        !hint.doNotRetry &&
        (hint.kind === 'quota' || hint.kind === 'overload' || hint.kind === 'transient-unknown');
      if (!retryable) {
        giveUp(
          `Gave up on ${label}: the failure is not retryable (${why(hint)})${hint.message ? `: ${hint.message}` : ''}`,
          hint,
          attempt,
          error,
        );
      }
      const hinted = hint.delayMs;
      const waitMs =
        hinted === undefined
          ? backoffDelayMs(attempt - 1, random)
          : hinted + Math.min(Math.max(random(), 0), 1) * 1000;
      if (attempt >= maxAttempts) {
        giveUp(
          `Gave up on ${label} after ${attempt} attempts: still limited (${why(hint)})`,
          hint,
          attempt,
          error,
        );
      }
      if (hinted !== undefined && hinted > maxWaitMs) {
        giveUp(
          `Gave up on ${label}: it asked to wait ${seconds(hinted)} s, longer than the ${seconds(maxWaitMs)} s allowed (${why(hint)})`,
          hint,
          attempt,
          error,
        );
      }
      if (nowMs + waitMs > deadlineMs) {
        giveUp(
          `Gave up on ${label}: waiting ${seconds(waitMs)} s would exceed the task's budget (${why(hint)})`,
          hint,
          attempt,
          error,
        );
      }
      options.bus.publish(
        statusEvent(
          options,
          TASK_STATES.working,
          `Waiting ${seconds(waitMs)} s for ${label} (${why(hint)}); attempt ${attempt + 1} of ${maxAttempts} follows`,
          nowMs,
        ),
      );
      await sleep(waitMs, options.signal);
    }
  }
}
