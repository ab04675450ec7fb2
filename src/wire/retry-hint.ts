/**
 * @module retry-hint
 * The types of a call's retry guidance (`RetryHint`): what any wire shape decodes to.
 */

/**
 * How a failure should be treated.
 * - `quota`: the caller's own limit (429; RESOURCE_EXHAUSTED or -32603 with reason RATE_LIMIT_EXCEEDED;
 *   a spec-literal 500 / -32603 / INTERNAL that carries retry guidance).
 * - `overload`: the agent is failing for everyone (503, UNAVAILABLE with retry guidance, or reason AGENT_OVERLOADED).
 * - `transient-unknown`: 500/502/504, INTERNAL, UNAVAILABLE without guidance, a gateway page, a reset connection: maybe nothing happened, maybe something did.
 * - `not-retryable`: anything else (including RESOURCE_EXHAUSTED with no rate-limit evidence, e.g. message too large).
 */
export type HintKind = 'quota' | 'overload' | 'transient-unknown' | 'not-retryable';

/**
 * Where a hinted delay was read from, in precedence order.
 */
export type DelaySource =
  | 'retry-info'
  | 'retry-after'
  | 'ratelimit'
  | 'x-ratelimit'
  | 'grpc-pushback'
  | 'error-info-metadata';

/**
 * A quota policy as announced by `RateLimit-Policy` (q per w seconds), used for pacing.
 */
export interface AnnouncedPolicy {
  readonly policy: string;
  /** `q`. */
  readonly limit: number;
  /** `w`, seconds. */
  readonly windowSeconds: number;
  /** `qu` when it is not `requests`: `limit` counts these units (e.g. `tokens`), not requests. */
  readonly unit?: string;
}

/**
 * A `RateLimit` field item (draft-11, or the legacy `limit=, remaining=, reset=` / `X-RateLimit-*` forms).
 */
export interface AnnouncedState {
  /** Policy name when the form names one. */
  readonly policy?: string;
  /** `r`: requests (or `unit`s) left now. */
  readonly remaining: number;
  /** `t`: seconds until `remaining` grows / the window resets. */
  readonly resetSeconds?: number;
  /** Set when the state's policy is announced in another unit than requests (`qu`). */
  readonly unit?: string;
}

/**
 * Everything a response said about retrying, from any binding.
 */
export interface RetryHint {
  readonly kind: HintKind;
  /** Server-hinted delay, ms, finite and ≥ 0; absent when the response gave none. */
  readonly delayMs?: number;
  /** Which field `delayMs` came from. */
  readonly delaySource?: DelaySource;
  /** True when the only hint was a negative or unparseable `grpc-retry-pushback-ms`: do not retry. */
  readonly doNotRetry?: boolean;
  /** ErrorInfo metadata `policy`, or the `RateLimit` item's name. */
  readonly policy?: string;
  /** ErrorInfo reason, e.g. `RATE_LIMIT_EXCEEDED`. */
  readonly reason?: string;
  /** ErrorInfo domain. */
  readonly domain?: string;
  /** ErrorInfo metadata `reserved` ("true"/"false") when present. */
  readonly reserved?: boolean;
  /** HTTP status, or gRPC code for the gRPC binding. */
  readonly status?: number;
  /** Error message from the body / grpc-message, if any. */
  readonly message?: string;
  /** Policies announced by `RateLimit-Policy`. */
  readonly policies?: readonly AnnouncedPolicy[];
  /** States announced by `RateLimit` (or legacy / X-RateLimit forms). */
  readonly states?: readonly AnnouncedState[];
}

/**
 * What a response announced about the limits (`RateLimit-Policy` and `RateLimit`).
 */
export interface RateLimitInfo {
  readonly policies: readonly AnnouncedPolicy[];
  readonly states: readonly AnnouncedState[];
}
