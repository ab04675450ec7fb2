/**
 * @module server/grpc/grpc-request-fields
 * What admission reads from a still-encoded gRPC request (tenant, messageId), for a proxy that
 * forwards the bytes it decided on.
 */

import type { A2AMethod } from '../../core/a2a-methods.js';
import { requestLayoutOf, scanRequestFields } from './encoded-request.js';

/** The fields admission reads from an A2A request message. */
export interface GrpcRequestFields {
  /** The request's tenant, if it names one. */
  readonly tenant: string | undefined;
  /** The messageId of a send request's message, if any. */
  readonly messageId: string | undefined;
}

/**
 * Reads the tenant and messageId of an encoded A2A request message of `method` (of the 1.0
 * service `lf.a2a.v1` unless `options.package` says the v0.3 `a2a.v1`), skipping every other
 * field undecoded.
 * Undefined when the bytes are not a protobuf message that can be followed (refuse it).
 *
 * @example
 * ```ts
 * const method = grpcMethodOf(':path value'); // 'SendMessage'
 * readGrpcRequestFields('SendMessage', messageBytes)?.messageId; // 'm-1'
 * ```
 */
export function readGrpcRequestFields(
  method: A2AMethod,
  message: Uint8Array,
  options: { readonly package?: 'lf.a2a.v1' | 'a2a.v1' } = {},
): GrpcRequestFields | undefined {
  return scanRequestFields(message, requestLayoutOf(method, options.package ?? 'lf.a2a.v1'));
}
