/**
 * @module upstream-failure
 * The upstream's failures as rejections the limiter encodes: unreachable or late, or its own
 * 429 / 503 with a delay. Pure.
 */

import type { A2AMethod, Rejection } from 'a2a-ratelimit';
import { parseRetryAfter, REASONS } from 'a2a-ratelimit';

/** The policy name upstream failures are reported under. */
export const UPSTREAM_POLICY = 'upstream';

/**
 * The rejection for an upstream that could not be reached (or timed out): nothing ran. An
 * overload rejection (503, ErrorInfo reason `AGENT_UNAVAILABLE` in the operator's domain) with a
 * `Retry-After`.
 *
 * @example
 * ```ts
 * limiter.encodeRest(unavailableRejection('SendMessage', 1000, 'connect ECONNREFUSED'));
 * ```
 */
export function unavailableRejection(
  method: A2AMethod,
  retryAfterMs: number,
  why: string,
): Rejection {
  return {
    kind: 'overload',
    reason: REASONS.unavailable,
    retryAfterMs,
    policy: UPSTREAM_POLICY,
    scope: 'agent',
    subject: 'agent',
    method,
    message: `the agent behind this gateway is unavailable (${why}); nothing ran, retry after the delay`,
  };
}

/**
 * The rejection an upstream 429 / 503 with a `Retry-After` becomes: a quota / overload rejection
 * carrying its delay (undefined for any other answer, which passes through untouched). An HTTP-date
 * is read against `nowMs`.
 *
 * @example
 * ```ts
 * upstreamRejection('GetTask', 429, '3', Date.now())?.retryAfterMs; // 3000
 * ```
 */
export function upstreamRejection(
  method: A2AMethod,
  status: number,
  retryAfter: string | undefined,
  nowMs: number,
): Rejection | undefined {
  if ((status !== 429 && status !== 503) || retryAfter === undefined) return undefined;
  const ms = parseRetryAfter(retryAfter, nowMs);
  if (ms === undefined) return undefined;
  if (status === 429) {
    return {
      kind: 'quota',
      retryAfterMs: ms,
      policy: UPSTREAM_POLICY,
      scope: 'agent',
      subject: 'agent',
      method,
      message: `the agent refused the request for now (HTTP 429); retry after ${Math.ceil(ms / 1000)} s`,
    };
  }
  return {
    kind: 'overload',
    retryAfterMs: ms,
    policy: UPSTREAM_POLICY,
    scope: 'agent',
    subject: 'agent',
    method,
    message: `the agent is overloaded (HTTP 503); retry after ${Math.ceil(ms / 1000)} s`,
  };
}
