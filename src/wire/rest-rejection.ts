/**
 * @module rest-rejection
 * The HTTP+JSON (REST) binding of a rejection (429 / 503, google.rpc.Status JSON) and its decoder.
 */

import type { Rejection } from '../core/rejection.js';
import { type DecodedRejection, readRejectionDetails } from './decoded-rejection.js';
import { parseErrorBody } from './error-body.js';
import { type HeadersLike, headerLookup } from './headers-like.js';
import { detailsToJson } from './proto-json.js';
import {
  type RejectionEncodeOptions,
  rejectionDelayHeaders,
  rejectionDetails,
} from './rejection-details.js';
import { parseRetryAfter } from './retry-after.js';

/**
 * An HTTP response carrying a rejection: status, lower-case header names, and the body text.
 */
export interface HttpRejectionResponse<S extends number = number> {
  readonly status: S;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** HTTP status and `google.rpc.Code` name per kind. */
const REST_STATUS = {
  quota: { status: 429, name: 'RESOURCE_EXHAUSTED' },
  overload: { status: 503, name: 'UNAVAILABLE' },
} as const;

/**
 * Encodes a rejection for the HTTP+JSON binding: HTTP 429 (quota) or 503 (overload), body
 * `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":…,"details":[ErrorInfo, RetryInfo,
 * QuotaFailure?]}}`, headers `content-type: application/a2a+json`, `retry-after: <s>`, and
 * `ratelimit-policy` / `ratelimit` when `limits` are given. Throws on an A2A domain.
 *
 * @example
 * ```ts
 * const { status, headers, body } = encodeRestRejection(rejection, { domain: 'agents.example.com', limits });
 * res.writeHead(status, headers).end(body);
 * ```
 */
export function encodeRestRejection(
  rejection: Rejection,
  options: RejectionEncodeOptions,
): HttpRejectionResponse<429 | 503> {
  const { status, name } = REST_STATUS[rejection.kind];
  const details = detailsToJson(rejectionDetails(rejection, options.domain));
  return {
    status,
    headers: {
      'content-type': 'application/a2a+json',
      ...rejectionDelayHeaders(rejection, options.limits),
    },
    body: JSON.stringify({
      error: { code: status, status: name, message: rejection.message, details },
    }),
  };
}

/**
 * Decodes a REST rejection produced by {@link encodeRestRejection} (or any agent using the same
 * shape): `undefined` unless the status is 429 / 503, the body is google.rpc.Status JSON with a
 * matching `code`, and its ErrorInfo carries one of our reasons (of the kind the status implies)
 * outside A2A's domain. Without RetryInfo the delay comes from `retry-after` delta-seconds.
 *
 * @example
 * ```ts
 * decodeRestRejection(res.status, res.headers, await res.text())?.delaySeconds; // 12
 * ```
 */
export function decodeRestRejection(
  status: number,
  headers: HeadersLike,
  body: string,
): DecodedRejection | undefined {
  const kind = status === 429 ? 'quota' : status === 503 ? 'overload' : undefined;
  const parsed = parseErrorBody(body);
  if (kind === undefined || parsed?.shape !== 'google-rpc' || parsed.code !== status) {
    return undefined;
  }
  return readRejectionDetails(
    parsed.details,
    kind,
    parsed.message ?? '',
    retryAfterSeconds(headerLookup(headers)('retry-after')),
  );
}

/**
 * A delta-seconds `Retry-After` as seconds (HTTP-dates need a clock and are not read here).
 *
 * @example
 * ```ts
 * retryAfterSeconds('12'); // 12
 * ```
 */
export function retryAfterSeconds(value: string | undefined): number | undefined {
  const ms =
    value !== undefined && /^\s*\d+\s*$/.test(value) ? parseRetryAfter(value, 0) : undefined;
  return ms === undefined ? undefined : ms / 1000;
}
