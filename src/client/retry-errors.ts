/**
 * @module retry-errors
 * The typed errors the retrying client throws when it stops: `RateLimitedError` (the caller's
 * quota), `AgentOverloadedError` (the agent is failing for everyone) and `RetryBudgetExceededError`
 * (the wait the agent asked for does not fit in what is left of the caller's budget). Each carries
 * the last {@link RetryHint}. They are recognised by a readonly brand property, not by
 * `instanceof`, so the guards work across duplicate installs of this package.
 * Failures that are not rate limits (not retryable, or unsafe to repeat) are never wrapped: the
 * transport's own error or response reaches the caller unchanged.
 */

import type { RetryHint } from '../wire/retry-hint.js';

/**
 * Stable `code` strings of the client's errors.
 *
 * @example
 * ```ts
 * if (e.code === RETRY_ERROR_CODES.budget) console.log('the agent asked for a longer wait');
 * ```
 */
export const RETRY_ERROR_CODES = {
  rateLimited: 'ERR_A2A_RATE_LIMITED',
  overloaded: 'ERR_A2A_AGENT_OVERLOADED',
  budget: 'ERR_A2A_RETRY_BUDGET_EXCEEDED',
} as const;

/**
 * Options shared by the error constructors.
 *
 * @example
 * ```ts
 * new RateLimitedError(hint, { attempts: 3, cause: lastError });
 * ```
 */
export interface RetryErrorOptions {
  /** Requests sent for this call, including the first. */
  readonly attempts: number;
  /** The last transport error, when the failure was thrown rather than returned. */
  readonly cause?: unknown;
}

function describeDelay(hint: RetryHint): string {
  return hint.delayMs === undefined ? 'no delay given' : `retry in ${Math.ceil(hint.delayMs)} ms`;
}

/**
 * What the three client errors share: the last hint the agent sent and the attempts made. Use the
 * concrete classes' guards (`isRateLimitedError`, …) to tell them apart.
 *
 * @example
 * ```ts
 * if (e instanceof HintedRetryError) console.log(e.hint.delayMs, e.attempts);
 * ```
 */
export abstract class HintedRetryError extends Error {
  /** The last hint the agent sent. */
  readonly hint: RetryHint;
  /** Requests sent for this call, including the first. */
  readonly attempts: number;

  protected constructor(message: string, hint: RetryHint, options: RetryErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.hint = hint;
    this.attempts = options.attempts;
  }
}

/**
 * The caller's own quota was exceeded and the client stopped retrying (retries used up, or the
 * agent said not to retry). `hint.delayMs` is when the agent said to come back.
 *
 * @example
 * ```ts
 * try { await client.sendMessage(params); }
 * catch (e) { if (isRateLimitedError(e)) console.log(e.hint.policy, e.hint.delayMs); }
 * ```
 */
export class RateLimitedError extends HintedRetryError {
  override readonly name = 'RateLimitedError';
  /** Brand checked by {@link isRateLimitedError}. */
  readonly isRateLimitedError = true;
  readonly code = RETRY_ERROR_CODES.rateLimited;

  constructor(hint: RetryHint, options: RetryErrorOptions) {
    super(
      `Rate limited${hint.policy ? ` by "${hint.policy}"` : ''} after ${options.attempts} attempt(s): ${describeDelay(hint)}${hint.message ? ` (${hint.message})` : ''}`,
      hint,
      options,
    );
  }
}

/**
 * The agent is overloaded (503 / UNAVAILABLE / `AGENT_OVERLOADED`) and the client stopped
 * retrying. Consider another agent or a degraded path.
 *
 * @example
 * ```ts
 * catch (e) { if (isAgentOverloadedError(e)) useFallbackAgent(); }
 * ```
 */
export class AgentOverloadedError extends HintedRetryError {
  override readonly name = 'AgentOverloadedError';
  /** Brand checked by {@link isAgentOverloadedError}. */
  readonly isAgentOverloadedError = true;
  readonly code = RETRY_ERROR_CODES.overloaded;

  constructor(hint: RetryHint, options: RetryErrorOptions) {
    super(
      `Agent overloaded after ${options.attempts} attempt(s): ${describeDelay(hint)}${hint.message ? ` (${hint.message})` : ''}`,
      hint,
      options,
    );
  }
}

/**
 * Options of {@link RetryBudgetExceededError}.
 *
 * @example
 * ```ts
 * new RetryBudgetExceededError(hint, { attempts: 1, requiredWaitMs: 90_000, remainingMs: 30_000 });
 * ```
 */
export interface RetryBudgetExceededOptions extends RetryErrorOptions {
  /** The wait the client would have needed, ms from now. */
  readonly requiredWaitMs: number;
  /** What was left of the caller's budget, ms (`Infinity` when only `maxSingleWaitMs` applied). */
  readonly remainingMs: number;
}

/**
 * The wait the agent asked for (or the gate's queue) does not fit: it exceeds what is left of the
 * caller's budget, or the configured `maxSingleWaitMs`. Thrown at once, instead of retrying early
 * or sleeping out a budget that cannot be used.
 *
 * @example
 * ```ts
 * catch (e) {
 *   if (isRetryBudgetExceededError(e)) failParentTask(`agent busy for ${e.requiredWaitMs} ms`);
 * }
 * ```
 */
export class RetryBudgetExceededError extends HintedRetryError {
  override readonly name = 'RetryBudgetExceededError';
  /** Brand checked by {@link isRetryBudgetExceededError}. */
  readonly isRetryBudgetExceededError = true;
  readonly code = RETRY_ERROR_CODES.budget;
  /** The wait that was needed, ms from now. */
  readonly requiredWaitMs: number;
  /** What was left of the budget, ms. */
  readonly remainingMs: number;

  constructor(hint: RetryHint, options: RetryBudgetExceededOptions) {
    super(
      `Retry budget exceeded: needed to wait ${Math.ceil(options.requiredWaitMs)} ms, ${Number.isFinite(options.remainingMs) ? `${Math.max(0, Math.floor(options.remainingMs))} ms left` : 'above maxSingleWaitMs'}${hint.policy ? ` (policy "${hint.policy}")` : ''}`,
      hint,
      options,
    );
    this.requiredWaitMs = options.requiredWaitMs;
    this.remainingMs = options.remainingMs;
  }
}

/**
 * Any of the three client errors.
 *
 * @example
 * ```ts
 * function delayOf(e: RetryError) { return e.hint.delayMs; }
 * ```
 */
export type RetryError = RateLimitedError | AgentOverloadedError | RetryBudgetExceededError;

function hasBrand(value: unknown, brand: string): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<string, unknown>)[brand] === true
  );
}

/**
 * Whether `value` is a {@link RateLimitedError} (from any copy of this package).
 *
 * @example
 * ```ts
 * if (isRateLimitedError(e)) console.log(e.hint.delayMs);
 * ```
 */
export function isRateLimitedError(value: unknown): value is RateLimitedError {
  return hasBrand(value, 'isRateLimitedError');
}

/**
 * Whether `value` is an {@link AgentOverloadedError} (from any copy of this package).
 *
 * @example
 * ```ts
 * if (isAgentOverloadedError(e)) console.log('agent is down for everyone');
 * ```
 */
export function isAgentOverloadedError(value: unknown): value is AgentOverloadedError {
  return hasBrand(value, 'isAgentOverloadedError');
}

/**
 * Whether `value` is a {@link RetryBudgetExceededError} (from any copy of this package).
 *
 * @example
 * ```ts
 * if (isRetryBudgetExceededError(e)) console.log(e.requiredWaitMs, e.remainingMs);
 * ```
 */
export function isRetryBudgetExceededError(value: unknown): value is RetryBudgetExceededError {
  return hasBrand(value, 'isRetryBudgetExceededError');
}

/**
 * Whether `value` is any of the client's retry errors.
 *
 * @example
 * ```ts
 * if (isRetryError(e)) console.log(e.code, e.hint);
 * ```
 */
export function isRetryError(value: unknown): value is RetryError {
  return (
    isRateLimitedError(value) || isAgentOverloadedError(value) || isRetryBudgetExceededError(value)
  );
}
