/**
 * @module server/grpc/admission-interceptor
 * The grpc-js server interceptor for `lf.a2a.v1.A2AService` (and the v0.3 `a2a.v1.A2AService`):
 * the request message is already deserialized in `onReceiveMessage`, so messageId and tenant are
 * read there and the admission pipeline runs (server/grpc/grpc-steps.ts); a rejection goes out
 * as a Trailers-Only status before the SDK's handler ever runs — for unary and server-streaming
 * methods alike.
 */

import * as grpc from '@grpc/grpc-js';
import { admitCall } from '../admission-pipeline.js';
import { type Limiter, TICKET_HEADER } from '../limiter.js';
import { ADMISSION_HEADER } from '../mediation.js';
import { GrpcCall } from './grpc-call.js';
import { grpcMethodOf } from './grpc-method.js';
import type { GrpcAdmissionOptions } from './grpc-options.js';
import { createGrpcSteps } from './grpc-steps.js';

/** Calls of other services pass through, less any admission mark a caller sent. */
const STRIP_ADMISSION: ConstructorParameters<typeof grpc.ServerInterceptingCall>[1] = {
  start(next) {
    next({
      onReceiveMetadata(md, nextMetadata) {
        md.remove(ADMISSION_HEADER);
        nextMetadata(md);
      },
    });
  },
};

/**
 * Creates the admission interceptor. Pass it to `new grpc.Server({ interceptors: [...] })`; calls
 * to other services pass through untouched.
 *
 * @example
 * ```ts
 * const server = new grpc.Server({ interceptors: [grpcAdmissionInterceptor(limiter, { userBuilder, requestHandler })] });
 * server.addService(A2AService, rateLimitedGrpcService({ requestHandler, userBuilder }));
 * ```
 */
export function grpcAdmissionInterceptor(
  limiter: Limiter,
  options: GrpcAdmissionOptions = {},
): grpc.ServerInterceptor {
  const steps = createGrpcSteps(limiter, options);
  return (descriptor, call) => {
    const method = grpcMethodOf(descriptor.path);
    if (method === undefined) return new grpc.ServerInterceptingCall(call, STRIP_ADMISSION);
    const state = new GrpcCall(call, method);
    /** Request messages received: every A2A rpc takes exactly one. */
    let messages = 0;
    const listener: grpc.ServerListener = {
      onReceiveMetadata(md, next) {
        md.remove(TICKET_HEADER);
        md.remove(ADMISSION_HEADER);
        state.metadata = md;
        next(md);
      },
      onReceiveMessage(message, next) {
        if (++messages > 1) {
          // Decided once per call: a second message is refused, never decided (or run) again.
          state.fail(grpc.status.UNIMPLEMENTED, 'Received a second request message');
          return;
        }
        state.receive(message, next);
        admitCall(steps, state);
      },
      onCancel() {
        state.finish();
      },
    };
    return new grpc.ServerInterceptingCall(call, {
      start(next) {
        next(listener);
      },
      sendMetadata(md, next) {
        const ticket = state.ticket;
        if (ticket !== undefined) {
          for (const [name, value] of Object.entries(ticket.headers)) md.set(name, value);
        }
        next(md);
      },
      sendMessage(message, next) {
        state.writes += 1;
        next(message);
      },
      sendStatus(status, next) {
        state.finish();
        next(status);
      },
    });
  };
}
