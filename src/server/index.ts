/**
 * @module server
 * Server side of a2a-ratelimit, a hand-written list: `createLimiter` (identity → one decision →
 * encoding, shared by all adapters) with its options and what an admission yields, task usage,
 * deduplication's task finder, the caller key by address, and the agent-card extension. Adapters:
 * `a2a-ratelimit/server/express`, `a2a-ratelimit/server/grpc`; metrics:
 * `a2a-ratelimit/server/metrics`.
 */
export {
  addressCallerKey,
  authenticatedCallerKey,
  createAddressKey,
} from './caller-key.js';
export {
  followPolicyChanges,
  RATE_LIMIT_EXTENSION_URI,
  withRateLimitExtension,
} from './card-extension.js';
export { findTaskByMessageId } from './find-task-by-message-id.js';
export { grpcMethodOf } from './grpc/grpc-method.js';
export { readGrpcRequestFields } from './grpc/grpc-request-fields.js';
export { createLimiter } from './limiter.js';
export {
  type AdmissionOutcome,
  type AdmissionTicket,
  type Limiter,
  TICKET_HEADER,
} from './limiter-api.js';
export {
  type AdmissionRequest,
  DEFAULT_LIMITER_OPTIONS,
  type LimiterOptions,
} from './limiter-options.js';
export { isRestRoute, matchRestRoute } from './rest-route.js';
export {
  type EventBusManagerLike,
  PendingRecordLostError,
} from './task-lease-tracker.js';
export { UnknownTaskUsageError } from './task-usage.js';
