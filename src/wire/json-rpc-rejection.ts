/**
 * @module json-rpc-rejection
 * The JSON-RPC binding of a rejection (`-32603` with the details in `error.data`) and its decoder.
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
import { type HttpRejectionResponse, retryAfterSeconds } from './rest-rejection.js';

/**
 * JSON-RPC error code of a rejection: `-32603` Internal error, the A2A spec's own example for
 * "rate limit exceeded" (A2A claims -32001…-32099 for its own errors).
 *
 * @example
 * ```ts
 * JSON_RPC_REJECTION_CODE; // -32603
 * ```
 */
export const JSON_RPC_REJECTION_CODE = -32603;

/**
 * Options of {@link encodeJsonRpcRejection}.
 */
export interface JsonRpcEncodeOptions extends RejectionEncodeOptions {
  /** The request's `id` (null when it could not be read). */
  readonly id: string | number | null;
  /** Send HTTP 429 / 503 instead of 200 (some JSON-RPC clients never parse non-200 bodies). */
  readonly mirrorHttpStatus?: boolean;
}

/**
 * Encodes a rejection for the JSON-RPC binding: body `{"jsonrpc":"2.0","id":…,"error":{"code":
 * -32603,"message":…,"data":[ErrorInfo, RetryInfo, QuotaFailure?]}}`, status 200 (or 429 / 503
 * with `mirrorHttpStatus`), headers `content-type: application/json`, `retry-after: <s>`, and
 * `ratelimit-policy` / `ratelimit` when `limits` are given. Throws on an A2A domain.
 *
 * @example
 * ```ts
 * const { status, headers, body } = encodeJsonRpcRejection(rejection, { domain: 'agents.example.com', id: 1 });
 * status; // 200
 * ```
 */
export function encodeJsonRpcRejection(
  rejection: Rejection,
  options: JsonRpcEncodeOptions,
): HttpRejectionResponse<200 | 429 | 503> {
  const data = detailsToJson(rejectionDetails(rejection, options.domain));
  const mirrored = rejection.kind === 'quota' ? 429 : 503;
  return {
    status: options.mirrorHttpStatus === true ? mirrored : 200,
    headers: {
      'content-type': 'application/json',
      ...rejectionDelayHeaders(rejection, options.limits),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id,
      error: { code: JSON_RPC_REJECTION_CODE, message: rejection.message, data },
    }),
  };
}

/**
 * Decodes a JSON-RPC rejection produced by {@link encodeJsonRpcRejection}: `undefined` unless the
 * body is a JSON-RPC error with code -32603 whose `data` (array, or one object) holds our
 * ErrorInfo, over HTTP 200 or the mirrored 429 / 503 of the same kind.
 *
 * @example
 * ```ts
 * decodeJsonRpcRejection(200, res.headers, body)?.reason; // 'RATE_LIMIT_EXCEEDED'
 * ```
 */
export function decodeJsonRpcRejection(
  status: number,
  headers: HeadersLike,
  body: string,
): DecodedRejection | undefined {
  const expected = status === 429 ? 'quota' : status === 503 ? 'overload' : undefined;
  if (status !== 200 && expected === undefined) return undefined;
  const parsed = parseErrorBody(body);
  if (parsed?.shape !== 'json-rpc' || parsed.code !== JSON_RPC_REJECTION_CODE) return undefined;
  return readRejectionDetails(
    parsed.details,
    expected,
    parsed.message ?? '',
    retryAfterSeconds(headerLookup(headers)('retry-after')),
  );
}
