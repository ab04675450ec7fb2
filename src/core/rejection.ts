/**
 * @module rejection
 * `Admission` and `Rejection`, and the one rounding rule from an exact delay to whole seconds.
 */

import type { A2AMethod } from './a2a-methods.js';
import type { RejectionKind } from './policy.js';

/**
 * ErrorInfo reasons this library emits (in the operator's own domain, never `a2a-protocol.org`).
 *
 * @example
 * ```ts
 * REASONS.quota; // 'RATE_LIMIT_EXCEEDED'
 * ```
 */
export const REASONS = {
  quota: 'RATE_LIMIT_EXCEEDED',
  overload: 'AGENT_OVERLOADED',
  /** A copy of this message is still being processed: retry shortly for its task (503). */
  inProgress: 'MESSAGE_IN_PROGRESS',
  /**
   * The agent behind a gateway could not be reached, or did not answer in time: nothing ran;
   * retry after the delay (503, an overload rejection).
   */
  unavailable: 'AGENT_UNAVAILABLE',
} as const;

/**
 * One of {@link REASONS}.
 */
export type RejectionReason = (typeof REASONS)[keyof typeof REASONS];

/**
 * Which signal of an overload policy refused a request: the agent's requests in flight
 * (`inFlight`, `maxInFlight`), its event-loop delay (`eventLoopDelay`, `maxEventLoopDelayMs`), or
 * the caller's own share of the requests in flight (`callerShare`, `maxInFlightPerCaller`: a quota
 * refusal of that caller). ErrorInfo metadata `signal`.
 */
export type RejectionSignal = 'inFlight' | 'eventLoopDelay' | 'callerShare';

/**
 * The quota that was exceeded: a rate (`windowSeconds` set) or a concurrency cap (no window).
 */
export interface QuotaState {
  /** Requests per window, or concurrent requests. */
  readonly limit: number;
  /** Window, seconds; absent for concurrency caps. */
  readonly windowSeconds?: number;
  /** Whole units left now (0 on a rejection). */
  readonly remaining: number;
  /** A usage policy's unit (e.g. `tokens`): `limit` counts it; absent = requests. */
  readonly unit?: string;
}

/**
 * A rejection: everything a binding needs to encode it. Decided before any side effect, so a
 * rejected call did nothing and is safe to retry.
 *
 * @example
 * ```ts
 * const r: Rejection = {
 *   kind: 'quota', retryAfterMs: 12_000, policy: 'per-caller', scope: 'caller',
 *   subject: 'caller:orchestrator-7', method: 'SendMessage',
 *   quota: { limit: 60, windowSeconds: 60, remaining: 0 }, reserved: true,
 *   message: 'caller:orchestrator-7 exceeded per-caller (60 requests per 60 s) for SendMessage; retry in 12 s',
 * };
 * ```
 */
export interface Rejection {
  readonly kind: RejectionKind;
  /** Exact delay until this request would be admitted, ms (from store state). */
  readonly retryAfterMs: number;
  /** Name of the policy that set the delay. */
  readonly policy: string;
  /** Scope label of that policy (`caller`, `tenant`, `skill`, `method`, `agent`, or custom). */
  readonly scope: string;
  /** Whose limit, e.g. `caller:orchestrator-7`. */
  readonly subject: string;
  /** The A2A method that was rejected. */
  readonly method: A2AMethod;
  /** Present for quota rejections of rate and concurrency policies. */
  readonly quota?: QuotaState;
  /** Rate rejections only: whether a slot is held for this request's messageId. */
  readonly reserved?: boolean;
  /** Tiered rate policies only: the caller's tier whose limits refused it. */
  readonly tier?: string;
  /** Human-readable summary. */
  readonly message: string;
  /** ErrorInfo reason when it is not the kind's own (e.g. `MESSAGE_IN_PROGRESS`, kind overload). */
  readonly reason?: RejectionReason;
  /** Overload policies only: the signal that refused the request (ErrorInfo metadata `signal`). */
  readonly signal?: RejectionSignal;
}

/**
 * The state of one rate policy for a request, for `RateLimit` / `RateLimit-Policy` headers.
 */
export interface LimitState {
  readonly policy: string;
  /** `q`: requests per window. */
  readonly limit: number;
  /** `w`: window, seconds. */
  readonly windowSeconds: number;
  /** `r`: whole requests (or units, for a usage policy) available now, net of holds. */
  readonly remaining: number;
  /** `t`: seconds until `remaining` next grows (0 when the bucket is full). */
  readonly resetSeconds: number;
  /** `qu`: the unit of `limit` and `remaining` for a usage policy (e.g. `tokens`); absent = requests. */
  readonly unit?: string;
}

/**
 * A concurrency lease taken at admission; release it when the task ends or the stream closes.
 */
export interface LeaseRef {
  /** Index of the policy in the compiled set. */
  readonly policyIndex: number;
  /** Storage key (the policy's subject). */
  readonly key: string;
  /** Unique id of this lease. */
  readonly leaseId: string;
}

/**
 * An admitted request.
 */
export interface Admission {
  readonly admitted: true;
  /** One entry per applicable rate policy, after this request was charged. */
  readonly limits: readonly LimitState[];
  /** Leases taken (concurrency and overload in-flight policies). */
  readonly leases: readonly LeaseRef[];
  /** True when the request was admitted by claiming a held slot. */
  readonly claimedHold: boolean;
}

/**
 * A rejected request, with the rate states for the headers.
 */
export interface RejectedDecision {
  readonly admitted: false;
  readonly rejection: Rejection;
  /** One entry per applicable rate policy; the rejecting one has `remaining` 0. */
  readonly limits: readonly LimitState[];
}

/**
 * The outcome of one admission decision.
 */
export type Decision = Admission | RejectedDecision;

/**
 * µs → the exact `retryAfterMs` of a rejection: rounded up to whole milliseconds.
 *
 * @example
 * ```ts
 * retryAfterMsOf(1_000_001); // 1001
 * ```
 */
export function retryAfterMsOf(delayUs: number): number {
  return Math.ceil(delayUs / 1000);
}

/**
 * Whole seconds for the wire: rounded up, never 0. Every wire form of one rejection
 * (`Retry-After`, `RetryInfo`, `RateLimit` `t`, pushback = seconds × 1000) uses this number.
 *
 * @example
 * ```ts
 * wireDelaySeconds(1);      // 1
 * wireDelaySeconds(12_000); // 12
 * wireDelaySeconds(12_001); // 13
 * ```
 */
export function wireDelaySeconds(retryAfterMs: number): number {
  if (!(retryAfterMs > 0)) return 1;
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/**
 * The ErrorInfo reason of a rejection.
 *
 * @example
 * ```ts
 * rejectionReason({ kind: 'overload' }); // 'AGENT_OVERLOADED'
 * ```
 */
export function rejectionReason(rejection: Pick<Rejection, 'kind' | 'reason'>): RejectionReason {
  return rejection.reason ?? REASONS[rejection.kind];
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * Human-readable quota, as rejection messages and `QuotaFailure.Violation.description` say it.
 *
 * @example
 * ```ts
 * describeQuota({ limit: 60, windowSeconds: 60, remaining: 0 }); // '60 requests per 60 s'
 * describeQuota({ limit: 5, remaining: 0 });                     // '5 concurrent requests'
 * describeQuota({ limit: 10_000, windowSeconds: 60, remaining: 0, unit: 'tokens' }); // '10000 tokens per 60 s'
 * ```
 */
export function describeQuota(quota: QuotaState): string {
  if (quota.windowSeconds === undefined) return plural(quota.limit, 'concurrent request');
  const amount =
    quota.unit === undefined ? plural(quota.limit, 'request') : `${quota.limit} ${quota.unit}`;
  return `${amount} per ${quota.windowSeconds} s`;
}
