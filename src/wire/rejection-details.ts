/**
 * @module rejection-details
 * What every binding says about a `Rejection`: the google.rpc details list and the delay headers.
 */

import {
  describeQuota,
  type LimitState,
  type QuotaState,
  type Rejection,
  rejectionReason,
  wireDelaySeconds,
} from '../core/rejection.js';
import { durationFromSeconds, formatJsonDuration } from './duration.js';
import { A2A_DOMAIN, type Detail, type QuotaViolation } from './google-rpc.js';
import { rateLimitHeaders } from './ratelimit-headers.js';

/**
 * Options every rejection encoder takes.
 */
export interface RejectionEncodeOptions {
  /** ErrorInfo domain: the operator's own (e.g. the card's host), never `a2a-protocol.org`. */
  readonly domain: string;
  /** Rate policy states for `RateLimit-Policy` / `RateLimit`; omitted → no RateLimit headers. */
  readonly limits?: readonly LimitState[];
}

/**
 * Throws a `RangeError` unless `domain` is a non-empty domain other than A2A's own
 * `a2a-protocol.org` (which A2A reserves for its own errors: a rate-limit reason there is not
 * recognised by clients).
 *
 * @example
 * ```ts
 * assertOperatorDomain('agents.example.com'); // ok
 * assertOperatorDomain('a2a-protocol.org');   // throws RangeError
 * ```
 */
export function assertOperatorDomain(domain: string): void {
  if (typeof domain !== 'string' || domain.trim() === '') {
    throw new RangeError(
      'ErrorInfo domain is required: pass your own domain, e.g. the host of your agent card URL',
    );
  }
  if (domain.trim().toLowerCase() === A2A_DOMAIN) {
    throw new RangeError(
      `ErrorInfo domain "${domain}" is reserved for A2A's own errors; rate-limit rejections must use your own domain (e.g. "agents.example.com")`,
    );
  }
}

function quotaViolation(rejection: Rejection, quota: QuotaState): QuotaViolation {
  return {
    subject: rejection.subject,
    description: describeQuota(quota),
    apiService: '',
    quotaMetric: '',
    quotaId: rejection.policy,
    quotaDimensions:
      rejection.tier === undefined
        ? { method: rejection.method, scope: rejection.scope }
        : { method: rejection.method, scope: rejection.scope, tier: rejection.tier },
    quotaValue: BigInt(Math.trunc(quota.limit)),
  };
}

/**
 * ErrorInfo metadata keys (AIP-193: lowerCamelCase) that repeat what other clients drop: the
 * delay (`retryDelay`, equal to RetryInfo's, in google.protobuf.Duration JSON form) and the kind
 * (`kind`: `quota` | `overload`, what the reason says). Some SDKs keep only `ErrorInfo.metadata`
 * of an error (a2a-python's JSON-RPC client: `InternalError.data`); these keys let their callers
 * still tell when, and whose limit. Our own decoders read them last: RetryInfo and the reason
 * stay authoritative.
 *
 * @example
 * ```ts
 * info.metadata[REJECTION_METADATA_KEYS.retryDelay]; // '12s'
 * ```
 */
export const REJECTION_METADATA_KEYS = { retryDelay: 'retryDelay', kind: 'kind' } as const;

/**
 * The details list of a rejection, in wire order: `ErrorInfo{reason, domain, metadata{policy,
 * scope, method[, reserved][, tier][, signal], retryDelay, kind}}`, `RetryInfo{retryDelay =
 * wireDelaySeconds}`, and for a quota rejection with `quota` set, `QuotaFailure` with one
 * violation. Throws on an A2A domain.
 *
 * @example
 * ```ts
 * const details = rejectionDetails(rejection, 'agents.example.com');
 * details.map((d) => d.type); // ['ErrorInfo', 'RetryInfo', 'QuotaFailure']
 * ```
 */
export function rejectionDetails(rejection: Rejection, domain: string): Detail[] {
  assertOperatorDomain(domain);
  const metadata: Record<string, string> = {
    policy: rejection.policy,
    scope: rejection.scope,
    method: rejection.method,
  };
  if (rejection.reserved !== undefined) metadata.reserved = String(rejection.reserved);
  if (rejection.tier !== undefined) metadata.tier = rejection.tier;
  if (rejection.signal !== undefined) metadata.signal = rejection.signal;
  const retryDelay = durationFromSeconds(wireDelaySeconds(rejection.retryAfterMs));
  metadata[REJECTION_METADATA_KEYS.retryDelay] = formatJsonDuration(retryDelay);
  metadata[REJECTION_METADATA_KEYS.kind] = rejection.kind;
  const details: Detail[] = [
    { type: 'ErrorInfo', message: { reason: rejectionReason(rejection), domain, metadata } },
    { type: 'RetryInfo', message: { retryDelay } },
  ];
  if (rejection.kind === 'quota' && rejection.quota !== undefined) {
    details.push({
      type: 'QuotaFailure',
      message: { violations: [quotaViolation(rejection, rejection.quota)] },
    });
  }
  return details;
}

/**
 * The delay headers of a rejection (lower-case names): `retry-after: <s>` and, when `limits` are
 * given, `ratelimit-policy` / `ratelimit` with the rejecting policy at `r=0`, `t=<s>`.
 *
 * @example
 * ```ts
 * rejectionDelayHeaders(rejection, limits);
 * // { 'retry-after': '12', 'ratelimit-policy': '"per-caller";q=60;w=60', ratelimit: '"per-caller";r=0;t=12' }
 * ```
 */
export function rejectionDelayHeaders(
  rejection: Rejection,
  limits: readonly LimitState[] | undefined,
): Record<string, string> {
  const delaySeconds = wireDelaySeconds(rejection.retryAfterMs);
  const headers: Record<string, string> = { 'retry-after': String(delaySeconds) };
  if (limits === undefined) return headers;
  const states = limits.map((state) =>
    state.policy === rejection.policy
      ? { ...state, remaining: 0, resetSeconds: delaySeconds }
      : state,
  );
  return { ...headers, ...rateLimitHeaders(states, rejection.policy) };
}
