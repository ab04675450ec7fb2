/**
 * @module server/grpc/rate-limited-grpc-service
 * The SDK's `grpcService` with the guarded request handler and context builder, for a server whose
 * interceptor admits the calls.
 */

import { grpcService } from '@a2a-js/sdk/server/grpc';
import { guardContextBuilder, guardRequestHandler } from '../mediation.js';

/**
 * The SDK's `grpcService` for an agent whose server has `grpcAdmissionInterceptor`: the same
 * options, with the request handler and context builder wrapped so that an operation runs only
 * for a call the interceptor admitted for it (see `guardRequestHandler`). Without the interceptor
 * in front, every operation fails with INTERNAL.
 *
 * @example
 * ```ts
 * server.addService(A2AService, rateLimitedGrpcService({ requestHandler, userBuilder }));
 * ```
 */
export function rateLimitedGrpcService(
  options: Parameters<typeof grpcService>[0],
): ReturnType<typeof grpcService> {
  return grpcService({
    ...options,
    requestHandler: guardRequestHandler(options.requestHandler),
    contextBuilder: guardContextBuilder(options.contextBuilder),
  });
}
