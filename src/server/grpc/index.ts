/**
 * @module server/grpc
 * The `a2a-ratelimit/server/grpc` entry: the grpc-js admission interceptor, the guarded
 * `grpcService`, and the service definition that leaves requests encoded until admitted.
 */

export { grpcAdmissionInterceptor } from './admission-interceptor.js';
export {
  DEFAULT_GRPC_MAX_MESSAGE_BYTES,
  rateLimitedServiceDefinition,
  type ServiceDefinitionOptions,
} from './encoded-request.js';
export type { GrpcAdmissionOptions } from './grpc-options.js';
export { rateLimitedGrpcService } from './rate-limited-grpc-service.js';
