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
  return refusalByUpstream(method, status === 429 ? 'quota' : 'overload', ms, `HTTP ${status}`);
}

/**
 * The agent's own refusal with a delay as our rejection: quota (it said 429 / RESOURCE_EXHAUSTED)
 * or overload (503 / UNAVAILABLE), policy `upstream`, scoped to the agent; `what` names what it
 * sent, for the message.
 *
 * @example
 * ```ts
 * refusalByUpstream('GetTask', 'quota', 3000, 'HTTP 429').message; // '… (HTTP 429); retry after 3 s'
 * ```
 */
export function refusalByUpstream(
  method: A2AMethod,
  kind: 'quota' | 'overload',
  retryAfterMs: number,
  what: string,
): Rejection {
  const seconds = Math.ceil(retryAfterMs / 1000);
  return {
    kind,
    retryAfterMs,
    policy: UPSTREAM_POLICY,
    scope: 'agent',
    subject: 'agent',
    method,
    message:
      kind === 'quota'
        ? `the agent refused the request for now (${what}); retry after ${seconds} s`
        : `the agent is overloaded (${what}); retry after ${seconds} s`,
  };
}
