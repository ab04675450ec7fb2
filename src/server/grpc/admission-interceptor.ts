/**
 * @module server/grpc/admission-interceptor
 * The grpc-js server interceptor for the A2A service (1.0 and v0.3): runs the admission pipeline
 * and refuses before the SDK's handler runs.
 */

import * as grpc from '@grpc/grpc-js';
import { admitCall } from '../admission-pipeline.js';
import { type Limiter, TICKET_HEADER } from '../limiter-api.js';
import { ADMISSION_HEADER } from '../mediation.js';
import { EncodedRequest, requestLayoutOf, scanRequestFields } from './encoded-request.js';
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
  const decodeFirst = options.skill !== undefined;
  return (descriptor, call) => {
    const method = grpcMethodOf(descriptor.path);
    if (method === undefined) return new grpc.ServerInterceptingCall(call, STRIP_ADMISSION);
    const state = new GrpcCall(call, method);
    const layout = requestLayoutOf(
      method,
      descriptor.path.startsWith('/a2a.v1.') ? 'a2a.v1' : 'lf.a2a.v1',
    );
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
        if (!(message instanceof EncodedRequest)) state.receive(message, next);
        else if (message.tooLarge) {
          state.fail(
            grpc.status.RESOURCE_EXHAUSTED,
            `message too large: ${message.size} bytes, the limit is ${message.maxBytes}`,
          );
          return;
        } else {
          // Decided on what a scan of the bytes reads; decoded only once admitted. A `skill`
          // function reads the decoded request, and bytes the scan cannot follow are decoded
          // first too (as grpc-js would have).
          const fields = decodeFirst ? undefined : scanRequestFields(message.encoded, layout);
          if (fields !== undefined) state.receiveEncoded(message, fields, next);
          else {
            let decoded: unknown;
            try {
              decoded = message.decode();
            } catch {
              state.fail(grpc.status.INTERNAL, 'Error deserializing request');
              return;
            }
            state.receive(decoded, next);
          }
        }
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
