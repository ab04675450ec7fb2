/**
 * @module server
 * The `a2a-ratelimit/server` entry, a hand-written list: `createLimiter` and what an admission
 * yields, task usage, dedup's task finder, caller keys, the card extension.
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
