/**
 * @module unauthenticated-response
 * A failed identity as each binding answers it: REST and JSON-RPC HTTP 401, gRPC UNAUTHENTICATED.
 */

import {
  type ErrorInfo,
  encodeStatus,
  GRPC_CODES,
  GRPC_METADATA,
  type Status,
  statusToJson,
} from 'a2a-ratelimit';
import type { IdentityFailure } from './identity-resolver.js';

/**
 * The ErrorInfo reason of every identity failure; `metadata.failure` says which
 * (`unknown-key`, `expired-token`, …).
 *
 * @example
 * ```ts
 * UNAUTHENTICATED_REASON; // 'UNAUTHENTICATED'
 * ```
 */
export const UNAUTHENTICATED_REASON = 'UNAUTHENTICATED';

/**
 * The JSON-RPC error code of an identity failure. A2A 1.0 defines no authentication error, and
 * -32001…-32099 are A2A's own (-32001 is TaskNotFound); -32603 is what the spec gives as the
 * JSON-RPC example of a system error and what the SDK itself answers when its user builder
 * throws. The HTTP status (401) and the ErrorInfo reason `UNAUTHENTICATED` carry the meaning.
 *
 * @example
 * ```ts
 * JSON_RPC_UNAUTHENTICATED_CODE; // -32603
 * ```
 */
export const JSON_RPC_UNAUTHENTICATED_CODE = -32603;

/** Options of every encoder. */
export interface UnauthenticatedEncodeOptions {
  /** ErrorInfo domain: the operator's own (e.g. the gateway's public host). */
  readonly domain: string;
}

/** Options of the JSON-RPC encoder. */
export interface JsonRpcUnauthenticatedOptions extends UnauthenticatedEncodeOptions {
  /** The request's `id` (null when it could not be read). */
  readonly id: string | number | null;
}

/** An HTTP answer: status, headers, body text. */
export interface UnauthenticatedHttpResponse {
  readonly status: 401;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** A gRPC answer: status code 16, message, trailers. */
export interface UnauthenticatedGrpcStatus {
  readonly code: 16;
  readonly message: string;
  readonly trailers: Record<string, string | Uint8Array>;
}

/**
 * The google.rpc Status of a failure: code UNAUTHENTICATED (16), the message, one ErrorInfo.
 *
 * @example
 * ```ts
 * unauthenticatedStatus({ ok: false, reason: 'unknown-key', message: 'the API key is not known' }, { domain: 'gw.example.com' });
 * ```
 */
export function unauthenticatedStatus(
  failure: IdentityFailure,
  options: UnauthenticatedEncodeOptions,
): Status {
  const info: ErrorInfo = {
    reason: UNAUTHENTICATED_REASON,
    domain: options.domain,
    metadata: { failure: failure.reason },
  };
  return {
    code: GRPC_CODES.UNAUTHENTICATED,
    message: failure.message,
    details: [{ type: 'ErrorInfo', message: info }],
  };
}

/**
 * The `WWW-Authenticate` challenge (RFC 6750): `Bearer` for a missing credential,
 * `Bearer error="invalid_token"` for a refused one.
 *
 * @example
 * ```ts
 * wwwAuthenticate({ ok: false, reason: 'missing-credential', message: '' }); // 'Bearer'
 * ```
 */
export function wwwAuthenticate(failure: IdentityFailure): string {
  return failure.reason === 'missing-credential' ? 'Bearer' : 'Bearer error="invalid_token"';
}

/**
 * REST (HTTP+JSON): HTTP 401, `application/a2a+json`,
 * `{ "error": { "code": 401, "status": "UNAUTHENTICATED", "message", "details": [ErrorInfo] } }`.
 *
 * @example
 * ```ts
 * const r = encodeRestUnauthenticated(failure, { domain: 'gw.example.com' });
 * res.writeHead(r.status, r.headers).end(r.body);
 * ```
 */
export function encodeRestUnauthenticated(
  failure: IdentityFailure,
  options: UnauthenticatedEncodeOptions,
): UnauthenticatedHttpResponse {
  const { details } = statusToJson(unauthenticatedStatus(failure, options));
  return {
    status: 401,
    headers: {
      'content-type': 'application/a2a+json',
      'www-authenticate': wwwAuthenticate(failure),
    },
    body: JSON.stringify({
      error: { code: 401, status: 'UNAUTHENTICATED', message: failure.message, details },
    }),
  };
}

/**
 * JSON-RPC: HTTP 401, `application/json`,
 * `{ "jsonrpc": "2.0", "id", "error": { "code": -32603, "message", "data": [ErrorInfo] } }`.
 *
 * @example
 * ```ts
 * const r = encodeJsonRpcUnauthenticated(failure, { domain: 'gw.example.com', id: 7 });
 * ```
 */
export function encodeJsonRpcUnauthenticated(
  failure: IdentityFailure,
  options: JsonRpcUnauthenticatedOptions,
): UnauthenticatedHttpResponse {
  const { details } = statusToJson(unauthenticatedStatus(failure, options));
  return {
    status: 401,
    headers: {
      'content-type': 'application/json',
      'www-authenticate': wwwAuthenticate(failure),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id,
      error: { code: JSON_RPC_UNAUTHENTICATED_CODE, message: failure.message, data: details },
    }),
  };
}

/**
 * gRPC: status UNAUTHENTICATED (16) with the binary google.rpc Status in
 * `grpc-status-details-bin`.
 *
 * @example
 * ```ts
 * const s = encodeGrpcUnauthenticated(failure, { domain: 'gw.example.com' });
 * // s.code === 16; s.trailers['grpc-status-details-bin'] is a Uint8Array
 * ```
 */
export function encodeGrpcUnauthenticated(
  failure: IdentityFailure,
  options: UnauthenticatedEncodeOptions,
): UnauthenticatedGrpcStatus {
  return {
    code: GRPC_CODES.UNAUTHENTICATED,
    message: failure.message,
    trailers: {
      [GRPC_METADATA.statusDetails]: encodeStatus(unauthenticatedStatus(failure, options)),
    },
  };
}
