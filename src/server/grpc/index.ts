/**
 * @module server/grpc
 * The `a2a-ratelimit/server/grpc` entry: the grpc-js admission interceptor for the A2A service
 * (`grpcAdmissionInterceptor`), which runs the admission pipeline shared with Express
 * (server/admission-pipeline.ts) and sends a rejection as RESOURCE_EXHAUSTED / UNAVAILABLE with
 * binary `grpc-status-details-bin`, `grpc-retry-pushback-ms` and `retry-after` before the SDK's
 * handler runs; and the SDK's `grpcService` guarded so that nothing runs undecided
 * (`rateLimitedGrpcService`), and the service definition that leaves request messages encoded until
 * admitted (`rateLimitedServiceDefinition`). The backstops `guardRequestHandler` / `guardContextBuilder` are
 * exported once, from `a2a-ratelimit/server/express`. The only folder importing `@grpc/grpc-js`.
 * See docs/architecture.md, "Mediation".
 */

export { grpcAdmissionInterceptor } from './admission-interceptor.js';
export {
  DEFAULT_GRPC_MAX_MESSAGE_BYTES,
  rateLimitedServiceDefinition,
  type ServiceDefinitionOptions,
} from './encoded-request.js';
export type { GrpcAdmissionOptions } from './grpc-options.js';
export { rateLimitedGrpcService } from './rate-limited-grpc-service.js';
