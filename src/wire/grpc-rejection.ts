/**
 * @module grpc-rejection
 * The gRPC binding of a rejection (Trailers-Only, `grpc-status-details-bin`) and its decoder.
 */

import { type Rejection, wireDelaySeconds } from '../core/rejection.js';
import { type DecodedRejection, readRejectionDetails } from './decoded-rejection.js';
import { GRPC_CODES } from './google-rpc.js';
import {
  binaryMetadataValues,
  type MetadataLike,
  metadataHeaders,
  metadataLookup,
} from './headers-like.js';
import { encodeStatus, tryDecodeStatus } from './proto-binary.js';
import {
  type RejectionEncodeOptions,
  rejectionDelayHeaders,
  rejectionDetails,
} from './rejection-details.js';
import { retryAfterSeconds } from './rest-rejection.js';

/**
 * Metadata keys this binding uses.
 *
 * @example
 * ```ts
 * trailers[GRPC_METADATA.statusDetails]; // Uint8Array
 * ```
 */
export const GRPC_METADATA = {
  statusDetails: 'grpc-status-details-bin',
  retryPushback: 'grpc-retry-pushback-ms',
  retryAfter: 'retry-after',
} as const;

/**
 * A gRPC status carrying a rejection. `trailers` values are text, or bytes for `-bin` keys (the
 * gRPC library base64-encodes those on the wire).
 *
 * @example
 * ```ts
 * call.sendStatus({ code: r.code, details: r.message, metadata: toGrpcMetadata(r.trailers) });
 * ```
 */
export interface GrpcRejectionStatus {
  readonly code: 8 | 14;
  readonly message: string;
  readonly trailers: Record<string, string | Uint8Array>;
}

/**
 * Encodes a rejection for the gRPC binding: code 8 (quota) or 14 (overload), the rejection's
 * message (the `grpc-message`), and trailers `grpc-status-details-bin` (binary
 * `google.rpc.Status{code, message, details: [ErrorInfo, RetryInfo, QuotaFailure?]}`),
 * `grpc-retry-pushback-ms` (= seconds × 1000), `retry-after` (seconds), plus `ratelimit-policy` /
 * `ratelimit` when `limits` are given (a Trailers-Only response is one header block). Throws on an
 * A2A domain.
 *
 * @example
 * ```ts
 * const { code, message, trailers } = encodeGrpcRejection(rejection, { domain: 'agents.example.com' });
 * trailers['grpc-retry-pushback-ms']; // '12000'
 * ```
 */
export function encodeGrpcRejection(
  rejection: Rejection,
  options: RejectionEncodeOptions,
): GrpcRejectionStatus {
  const code = rejection.kind === 'quota' ? GRPC_CODES.RESOURCE_EXHAUSTED : GRPC_CODES.UNAVAILABLE;
  const details = rejectionDetails(rejection, options.domain);
  const delaySeconds = wireDelaySeconds(rejection.retryAfterMs);
  return {
    code,
    message: rejection.message,
    trailers: {
      ...rejectionDelayHeaders(rejection, options.limits),
      [GRPC_METADATA.statusDetails]: encodeStatus({ code, message: rejection.message, details }),
      [GRPC_METADATA.retryPushback]: String(delaySeconds * 1000),
    },
  };
}

/**
 * Decodes a gRPC rejection produced by {@link encodeGrpcRejection}: `undefined` unless the code is
 * 8 / 14, `grpc-status-details-bin` (bytes or base64 text) decodes to a Status with the same code
 * whose details carry our ErrorInfo of the matching kind. The message is the Status message, else
 * `message`.
 *
 * @example
 * ```ts
 * decodeGrpcRejection(err.code, err.details, metadataRecord)?.policy; // 'per-caller'
 * ```
 */
export function decodeGrpcRejection(
  code: number,
  message: string,
  metadata: MetadataLike,
): DecodedRejection | undefined {
  const kind =
    code === GRPC_CODES.RESOURCE_EXHAUSTED
      ? 'quota'
      : code === GRPC_CODES.UNAVAILABLE
        ? 'overload'
        : undefined;
  if (kind === undefined) return undefined;
  const lookup = metadataLookup(metadata);
  const [bytes] = binaryMetadataValues(lookup, GRPC_METADATA.statusDetails);
  const status = bytes === undefined ? undefined : tryDecodeStatus(bytes);
  if (status === undefined || status.code !== code) return undefined;
  return readRejectionDetails(
    status.details,
    kind,
    status.message === '' ? message : status.message,
    retryAfterSeconds(metadataHeaders(lookup)(GRPC_METADATA.retryAfter)),
  );
}
