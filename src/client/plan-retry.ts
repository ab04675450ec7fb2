/**
 * @module plan-retry
 * The client's retry rules as one pure function: from a failed attempt's hint, how long to wait
 * before re-sending, or why to stop.
 */

import { MESSAGE_METHODS, toA2AMethod } from '../core/a2a-methods.js';
import type { RetryHint } from '../wire/retry-hint.js';

/**
 * Tunables of the retry rules. All durations in milliseconds.
 */
export interface RetryRules {
  /**
   * Re-sends after failures that gave no delay (backoff), at most: a count stops a hint-less loop.
   * @defaultValue 5
   */
  readonly maxRetries: number;
  /**
   * Re-sends after refusals (quota, overload) that gave a delay, at most. While hints keep coming
   * the deadline decides, so the default is no count. @defaultValue Infinity
   */
  readonly maxHintedRetries: number;
  /** A single wait longer than this fails at once with `RetryBudgetExceededError`. @defaultValue 60_000 */
  readonly maxSingleWaitMs: number;
  /** Upper bound of the uniform jitter added on top of a hinted delay. @defaultValue 1_000 */
  readonly jitterMs: number;
  /** Base of the full-jitter exponential backoff used when there is no hint. @defaultValue 500 */
  readonly backoffBaseMs: number;
  /** Cap of the backoff. @defaultValue 60_000 */
  readonly backoffCapMs: number;
  /**
   * The agent deduplicates SendMessage / SendStreamingMessage by messageId (its card says so), so a
   * transient failure of those may be retried. @defaultValue false
   */
  readonly agentDeduplicates: boolean;
}

/**
 * The defaults of {@link RetryRules}.
 *
 * @example
 * ```ts
 * DEFAULT_RETRY_RULES.backoffBaseMs; // 500
 * ```
 */
export const DEFAULT_RETRY_RULES: RetryRules = {
  maxRetries: 5,
  maxHintedRetries: Number.POSITIVE_INFINITY,
  maxSingleWaitMs: 60_000,
  jitterMs: 1_000,
  backoffBaseMs: 500,
  backoffCapMs: 60_000,
  agentDeduplicates: false,
};

/**
 * Why a call is not retried.
 * - `not-retryable`: the failure is not a limit and not transient (bad request, local RESOURCE_EXHAUSTED…).
 * - `unsafe`: a transient failure of a message the agent may have admitted, and it does not deduplicate.
 * - `do-not-retry`: the agent said so (negative or garbage `grpc-retry-pushback-ms`).
 * - `retries-exhausted`: `maxRetries` re-sends without a hint (or `maxHintedRetries` with one) were made.
 * - `budget`: the wait does not fit in the deadline or exceeds `maxSingleWaitMs`.
 */
export type StopReason =
  | 'not-retryable'
  | 'unsafe'
  | 'do-not-retry'
  | 'retries-exhausted'
  | 'budget';

/**
 * What to do after a failed attempt.
 */
export type RetryPlan =
  | {
      readonly action: 'retry';
      /** Wait before re-sending, ms (≥ `hintedDelayMs` when there is one). */
      readonly delayMs: number;
      /** The agent's delay, ms, when it gave one. */
      readonly hintedDelayMs?: number;
    }
  | {
      readonly action: 'stop';
      readonly reason: StopReason;
      /** The wait that would have been needed, ms (set for `budget`). */
      readonly requiredWaitMs?: number;
    };

/**
 * The situation a plan is made for.
 */
export interface RetryPlanInput {
  /** What the failed attempt said. */
  readonly hint: RetryHint;
  /** The A2A method (1.0 or legacy name; anything else is treated as not idempotent). */
  readonly method: string;
  /** Re-sends already made for this call. */
  readonly retriesSoFar: number;
  /**
   * How many of `retriesSoFar` followed a refusal with a delay ({@link isHintedRefusal}); the
   * rest count against `maxRetries` and set the backoff. @defaultValue 0
   */
  readonly hintedRetriesSoFar?: number | undefined;
  /** Now, ms. */
  readonly nowMs: number;
  /** The call's total deadline, ms on the same clock (`Infinity` for none). */
  readonly deadlineMs: number;
  /** Uniform in [0, 1). */
  readonly random: () => number;
  /**
   * The request may be repeated after an unknown outcome whatever `method` says — e.g. a webhook
   * POST, which receivers must process idempotently. @defaultValue false
   */
  readonly repeatable?: boolean | undefined;
}

/**
 * Whether a method may be repeated after an unknown outcome: Get*, List* and Cancel* operations.
 *
 * @example
 * ```ts
 * isIdempotentMethod('GetTask');     // true
 * isIdempotentMethod('SendMessage'); // false
 * ```
 */
export function isIdempotentMethod(method: string): boolean {
  const name = toA2AMethod(method) ?? method;
  return /^(Get|List|Cancel)[A-Z]/.test(name);
}

/**
 * Full-jitter exponential backoff: uniform in [0, min(cap, base · 2^retriesSoFar)), ms.
 *
 * @example
 * ```ts
 * backoffDelayMs(2, Math.random); // somewhere in [0, 2_000)
 * ```
 */
export function backoffDelayMs(
  retriesSoFar: number,
  random: () => number,
  rules: Pick<RetryRules, 'backoffBaseMs' | 'backoffCapMs'> = DEFAULT_RETRY_RULES,
): number {
  const ceilingMs = Math.min(rules.backoffCapMs, rules.backoffBaseMs * 2 ** retriesSoFar);
  return clampUnit(random()) * ceilingMs;
}

function clampUnit(x: number): number {
  return Number.isFinite(x) ? Math.min(Math.max(x, 0), 1) : 0;
}

/**
 * Whether a failure of this kind, for this method, may be re-sent at all.
 *
 * @example
 * ```ts
 * mayRetry({ kind: 'transient-unknown' }, 'SendMessage', false); // false
 * mayRetry({ kind: 'quota' }, 'SendMessage', false);             // true
 * ```
 */
export function mayRetry(
  hint: Pick<RetryHint, 'kind'>,
  method: string,
  agentDeduplicates: boolean,
): boolean {
  switch (hint.kind) {
    case 'quota':
    case 'overload':
      // Rejected at admission: nothing happened, safe for any method.
      return true;
    case 'transient-unknown': {
      const a2a = toA2AMethod(method);
      if (a2a !== undefined && MESSAGE_METHODS.has(a2a)) return agentDeduplicates;
      return isIdempotentMethod(method);
    }
    default:
      return false;
  }
}

/**
 * Whether a failure is a refusal that says when to come back: quota or overload with a usable
 * delay above zero. Such re-sends are bounded by the deadline (and `maxHintedRetries`), not by `maxRetries`.
 *
 * @example
 * ```ts
 * isHintedRefusal({ kind: 'quota', delayMs: 1_000 });             // true
 * isHintedRefusal({ kind: 'transient-unknown', delayMs: 1_000 }); // false
 * ```
 */
export function isHintedRefusal(hint: Pick<RetryHint, 'kind' | 'delayMs'>): boolean {
  // A zero delay ("come back now") counts against `maxRetries`: an agent answering
  // `Retry-After: 0` forever must not keep a client re-sending until its deadline.
  const delayMs = usableDelay(hint.delayMs);
  return (
    (hint.kind === 'quota' || hint.kind === 'overload') && delayMs !== undefined && delayMs > 0
  );
}

/**
 * Decides the next step after a failed attempt (docs/architecture.md, "The client"):
 * - not retryable, or a transient failure that is unsafe to repeat (neither idempotent, nor
 *   deduplicated, nor marked `repeatable`) → stop;
 * - the agent said "do not retry" → stop; a refusal with a delay after `maxHintedRetries` such
 *   re-sends, any other failure after `maxRetries` other re-sends → stop (while hints keep coming
 *   the deadline decides: no count by default);
 * - a hinted delay that exceeds `maxSingleWaitMs` or does not fit before the deadline → stop
 *   (`budget`): never clamped, never slept out;
 * - a hinted delay → wait it plus uniform(0, `jitterMs`) — jitter only ever lengthens the wait
 *   (it is trimmed to the deadline, never below the hint);
 * - no hint → full-jitter exponential backoff (base `backoffBaseMs`, cap `backoffCapMs`), which
 *   must also fit.
 *
 * @example
 * ```ts
 * planRetry(
 *   { hint: { kind: 'quota', delayMs: 12_000 }, method: 'SendMessage', retriesSoFar: 0, nowMs: 0, deadlineMs: 60_000, random: () => 0.5 },
 *   DEFAULT_RETRY_RULES,
 * ); // { action: 'retry', delayMs: 12_500, hintedDelayMs: 12_000 }
 * ```
 */
export function planRetry(
  input: RetryPlanInput,
  rules: RetryRules = DEFAULT_RETRY_RULES,
): RetryPlan {
  const { hint, method } = input;
  if (hint.kind === 'not-retryable') return { action: 'stop', reason: 'not-retryable' };
  const repeatable = input.repeatable === true && hint.kind === 'transient-unknown';
  if (!repeatable && !mayRetry(hint, method, rules.agentDeduplicates)) {
    return { action: 'stop', reason: 'unsafe' };
  }
  if (hint.doNotRetry === true) return { action: 'stop', reason: 'do-not-retry' };
  const hintedSoFar = Math.min(input.hintedRetriesSoFar ?? 0, input.retriesSoFar);
  const hintlessSoFar = input.retriesSoFar - hintedSoFar;
  const exhausted = isHintedRefusal(hint)
    ? hintedSoFar >= rules.maxHintedRetries
    : hintlessSoFar >= rules.maxRetries;
  if (exhausted) return { action: 'stop', reason: 'retries-exhausted' };

  const remainingMs = input.deadlineMs - input.nowMs;
  const hintedDelayMs = usableDelay(hint.delayMs);
  if (hintedDelayMs !== undefined) {
    if (hintedDelayMs > rules.maxSingleWaitMs || hintedDelayMs > remainingMs) {
      return { action: 'stop', reason: 'budget', requiredWaitMs: hintedDelayMs };
    }
    const jitterMs = clampUnit(input.random()) * rules.jitterMs;
    return {
      action: 'retry',
      delayMs: Math.min(hintedDelayMs + jitterMs, remainingMs),
      hintedDelayMs,
    };
  }
  const delayMs = backoffDelayMs(hintlessSoFar, input.random, rules);
  if (delayMs > rules.maxSingleWaitMs || delayMs > remainingMs) {
    return { action: 'stop', reason: 'budget', requiredWaitMs: delayMs };
  }
  return { action: 'retry', delayMs };
}

function usableDelay(delayMs: number | undefined): number | undefined {
  return typeof delayMs === 'number' && Number.isFinite(delayMs) && delayMs >= 0
    ? delayMs
    : undefined;
}
