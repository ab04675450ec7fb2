/**
 * @module server/grpc/grpc-options
 * The options of the gRPC admission interceptor.
 */

import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { UserBuilder } from '@a2a-js/sdk/server/grpc';
import type * as grpc from '@grpc/grpc-js';

/**
 * Who the caller is, from a gRPC call's metadata.
 *
 * @example
 * ```ts
 * const identify: GrpcIdentify = (metadata) => String(metadata.get('x-caller')[0] ?? 'anonymous');
 * ```
 */
export type GrpcIdentify = (
  metadata: grpc.Metadata,
  call: grpc.ServerInterceptingCallInterface,
) => string | Promise<string>;

/** Options of `grpcAdmissionInterceptor`. */
export interface GrpcAdmissionOptions {
  /**
   * The same `UserBuilder` the agent gives the SDK's `grpcService`. It is called with a call-like
   * object `{ metadata, request, getPeer() }` (the interceptor runs before the SDK's call object
   * exists). Default identity: `User.userName` of an authenticated user.
   */
  readonly userBuilder?: UserBuilder;
  /** Replaces the default identity entirely. */
  readonly identify?: GrpcIdentify;
  /**
   * Key of unauthenticated callers; default `addr:<remote address>`, IPv6 by prefix (never a
   * metadata value). A key that does not begin with `addr:` gets it.
   */
  readonly unauthenticatedKey?: (call: grpc.ServerInterceptingCallInterface) => string;
  /** IPv6 callers keyed by address share a key per prefix of this many bits (1–128); default 64. */
  readonly ipv6PrefixLength?: number;
  /** The skill a request targets, for skill-scoped policies. */
  readonly skill?: (request: unknown, metadata: grpc.Metadata) => string | undefined;
  /** The SDK request handler, to answer a duplicate message with its task (required while dedup is on). */
  readonly requestHandler?: A2ARequestHandler;
  /**
   * Response write deadline, ms: an admitted call whose response message is not written within it
   * (a caller that stops reading, e.g. an HTTP/2 flow-control window of 0) is cancelled — its
   * HTTP/2 stream reset with CANCEL — and its leases released. Default 30,000; `Infinity` turns
   * it off. Checked every quarter of the deadline.
   */
  readonly writeDeadlineMs?: number;
}
