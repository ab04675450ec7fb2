/**
 * @module retry-errors
 * The typed errors the retrying client throws when it stops on a limit, their codes, and the brand
 * guards that recognise them (also through SDK wrappers).
 */

import { BrandedError } from '../core/branded-error.js';
import { hasErrorBrand } from '../core/error-brand.js';
import { systemClock } from '../platform/system-clock.js';
import { kindOfReason } from '../wire/decoded-rejection.js';
import { extractRetryHint } from '../wire/extract-retry-hint.js';
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
export abstract class HintedRetryError extends BrandedError<
  (typeof RETRY_ERROR_CODES)[keyof typeof RETRY_ERROR_CODES]
> {
  /** The last hint the agent sent. */
  readonly hint: RetryHint;
  /** Requests sent for this call, including the first. */
  readonly attempts: number;

  /** @internal */
  protected constructor(
    name: string,
    code: (typeof RETRY_ERROR_CODES)[keyof typeof RETRY_ERROR_CODES],
    message: string,
    hint: RetryHint,
    options: RetryErrorOptions,
  ) {
    super(name, code, message, options.cause === undefined ? undefined : { cause: options.cause });
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
  declare readonly name: 'RateLimitedError';
  /** Brand checked by {@link isRateLimitedError}. */
  declare readonly isRateLimitedError: true;
  declare readonly code: typeof RETRY_ERROR_CODES.rateLimited;

  /** @internal */
  constructor(hint: RetryHint, options: RetryErrorOptions) {
    super(
      'RateLimitedError',
      RETRY_ERROR_CODES.rateLimited,
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
  declare readonly name: 'AgentOverloadedError';
  /** Brand checked by {@link isAgentOverloadedError}. */
  declare readonly isAgentOverloadedError: true;
  declare readonly code: typeof RETRY_ERROR_CODES.overloaded;

  /** @internal */
  constructor(hint: RetryHint, options: RetryErrorOptions) {
    super(
      'AgentOverloadedError',
      RETRY_ERROR_CODES.overloaded,
      `Agent overloaded after ${options.attempts} attempt(s): ${describeDelay(hint)}${hint.message ? ` (${hint.message})` : ''}`,
      hint,
      options,
    );
  }
}

/**
 * The client option that refused a wait: `budgetMs` (the call's budget, or its `deadlineMs`, has
 * less time left than the wait) or `maxSingleWaitMs` (no single wait may be that long).
 *
 * @example
 * ```ts
 * if (e.refusedBy === 'maxSingleWaitMs') console.log('raise maxSingleWaitMs to wait this out');
 * ```
 */
export type BudgetOption = 'budgetMs' | 'maxSingleWaitMs';

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
  /**
   * The option that refused; default `budgetMs` when the wait exceeds `remainingMs`, else
   * `maxSingleWaitMs`.
   */
  readonly refusedBy?: BudgetOption;
}

/**
 * The wait the agent asked for (or the pacer's queue) does not fit: it exceeds what is left of the
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
  declare readonly name: 'RetryBudgetExceededError';
  /** Brand checked by {@link isRetryBudgetExceededError}. */
  declare readonly isRetryBudgetExceededError: true;
  declare readonly code: typeof RETRY_ERROR_CODES.budget;
  /** The wait that was needed, ms from now. */
  readonly requiredWaitMs: number;
  /** What was left of the budget, ms. */
  readonly remainingMs: number;
  /** The client option that refused the wait. */
  readonly refusedBy: BudgetOption;

  /** @internal */
  constructor(hint: RetryHint, options: RetryBudgetExceededOptions) {
    const refusedBy =
      options.refusedBy ??
      (options.requiredWaitMs > options.remainingMs ? 'budgetMs' : 'maxSingleWaitMs');
    const who = hint.policy ? `policy "${hint.policy}"` : 'the agent';
    const limit =
      refusedBy === 'budgetMs'
        ? `more than the ${Math.max(0, Math.floor(options.remainingMs))} ms left of budgetMs`
        : 'longer than maxSingleWaitMs allows';
    super(
      'RetryBudgetExceededError',
      RETRY_ERROR_CODES.budget,
      `Retry budget exceeded (${refusedBy}): ${who} asks to wait ${Math.ceil(options.requiredWaitMs)} ms, ${limit}`,
      hint,
      options,
    );
    this.requiredWaitMs = options.requiredWaitMs;
    this.remainingMs = options.remainingMs;
    this.refusedBy = refusedBy;
  }
}

/**
 * Any of the three client errors. Failures that are not rate limits (not retryable, or unsafe to
 * repeat) are never wrapped: the transport's own error or response reaches the caller unchanged.
 *
 * @example
 * ```ts
 * function delayOf(e: RetryError) { return e.hint.delayMs; }
 * ```
 */
export type RetryError = RateLimitedError | AgentOverloadedError | RetryBudgetExceededError;

/**
 * The property of a grpc-js `ServiceError` (and so of the SDK's gRPC error's `cause`) that carries
 * the client's typed error when it stopped on a limit.
 *
 * @example
 * ```ts
 * (serviceError as Record<string, unknown>)[RETRY_ERROR_PROPERTY]; // RateLimitedError | …
 * ```
 */
export const RETRY_ERROR_PROPERTY = 'a2aRetryError';

const BRANDS = ['isRateLimitedError', 'isAgentOverloadedError', 'isRetryBudgetExceededError'];

/**
 * Finds the client's typed error in `error` or behind it: the error itself, its `cause` chain
 * (the SDK's `A2AError` keeps what it wrapped as `cause`), or the `RETRY_ERROR_PROPERTY` of
 * any error on that chain (grpc-js `ServiceError`). Failing those, an error the SDK threw on its
 * own for a limiter's refusal (see `refusalOf`) gives a `RateLimitedError` or
 * `AgentOverloadedError` made from it (`attempts` 1: the one answer it reports). Undefined when
 * the call did not stop on a limit.
 *
 * @example
 * ```ts
 * try { await client.sendMessage(params); }
 * catch (e) { console.log(retryErrorOf(e)?.hint.delayMs); }
 * ```
 */
export function retryErrorOf(error: unknown): RetryError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    // A wrapper a guard already recognised shows our brand; `retryError` is ours itself.
    const adopted = Object.hasOwn(current, 'retryError')
      ? (current as { retryError?: unknown }).retryError
      : undefined;
    if (BRANDS.some((brand) => hasErrorBrand(adopted, brand))) return adopted as RetryError;
    if (BRANDS.some((brand) => hasErrorBrand(current, brand))) return current as RetryError;
    const attached = (current as Record<string, unknown>)[RETRY_ERROR_PROPERTY];
    if (BRANDS.some((brand) => hasErrorBrand(attached, brand))) return attached as RetryError;
    current = (current as { cause?: unknown }).cause;
  }
  const hint = refusalOf(error);
  if (hint === undefined) return undefined;
  return hint.kind === 'overload'
    ? new AgentOverloadedError(hint, { attempts: 1 })
    : new RateLimitedError(hint, { attempts: 1 });
}

/**
 * The hint of an error that reports a limiter's refusal by itself: the SDK's
 * `JsonRpcTransportError` (`data` = our details, or only our ErrorInfo metadata), its REST error
 * (429 / 503 with the answer's headers), its gRPC error (`statusDetailsBin`, and the grpc-js
 * `ServiceError` on `cause`), a grpc-js `ServiceError`, or any error carrying such a response.
 * A refusal is a quota or overload hint that names one of our reasons or gives a delay (a bare
 * UNAVAILABLE from a dropped connection gives neither). Undefined otherwise.
 */
function refusalOf(error: unknown): RetryHint | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const hint = extractRetryHint({ kind: 'error', error }, systemClock.nowMs());
  if (hint.kind !== 'quota' && hint.kind !== 'overload') return undefined;
  return kindOfReason(hint.reason) !== undefined || hint.delayMs !== undefined ? hint : undefined;
}

/** Our error's fields a wrapper shows once a guard recognised it (its own `code` is kept). */
const ADOPTED = ['hint', 'attempts', 'code', 'requiredWaitMs', 'remainingMs', 'refusedBy'];

/**
 * A guard's answer for `brand`: true for our error itself; for a wrapper (an SDK error whose chain
 * leads to ours), true once the wrapper shows our error's brand and fields as read-only getters
 * (and `retryError`: our error itself), so the narrowed type is what the wrapper really has. A
 * frozen wrapper is not recognised (use {@link retryErrorOf}).
 */
function recognise(value: unknown, brand: string): boolean {
  if (hasErrorBrand(value, brand)) return true;
  const found = retryErrorOf(value);
  if (found === undefined || !hasErrorBrand(found, brand)) return false;
  const wrapper = value as Record<string, unknown>;
  if (!Object.isExtensible(wrapper)) return false;
  const source = found as unknown as Record<string, unknown>;
  const properties: PropertyDescriptorMap = {
    [brand]: { value: true, enumerable: false },
    retryError: { value: found, enumerable: false },
  };
  for (const key of ADOPTED) {
    if (key in source && !(key in wrapper)) {
      properties[key] = { get: () => source[key], enumerable: false };
    }
  }
  Object.defineProperties(wrapper, properties);
  return true;
}

/**
 * Whether `value` is a `RateLimitedError` (from any copy of this package), an error of the
 * SDK's clients wrapping one, or an SDK error that reports a quota refusal by itself (its JSON-RPC
 * `data`, REST status and headers, or gRPC status details carry our details): then `hint` and
 * `attempts` are readable on it, and `retryError` is ours; its own `message` and `code` stay.
 *
 * @example
 * ```ts
 * if (isRateLimitedError(e)) console.log(e.hint.delayMs);
 * ```
 */
export function isRateLimitedError(value: unknown): value is RateLimitedError {
  return recognise(value, 'isRateLimitedError');
}

/**
 * Whether `value` is an `AgentOverloadedError` (from any copy of this package), an SDK
 * error wrapping one, or an SDK error reporting an overload refusal by itself (see
 * {@link isRateLimitedError}).
 *
 * @example
 * ```ts
 * if (isAgentOverloadedError(e)) console.log('agent is down for everyone');
 * ```
 */
export function isAgentOverloadedError(value: unknown): value is AgentOverloadedError {
  return recognise(value, 'isAgentOverloadedError');
}

/**
 * Whether `value` is a `RetryBudgetExceededError` (from any copy of this package), or an SDK
 * error wrapping one (see {@link isRateLimitedError}).
 *
 * @example
 * ```ts
 * if (isRetryBudgetExceededError(e)) console.log(e.requiredWaitMs, e.remainingMs, e.refusedBy);
 * ```
 */
export function isRetryBudgetExceededError(value: unknown): value is RetryBudgetExceededError {
  return recognise(value, 'isRetryBudgetExceededError');
}

/**
 * Whether `value` is any of the client's retry errors (or an SDK error wrapping one).
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
