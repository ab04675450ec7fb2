/**
 * @module a2a-ratelimit
 * The main entry, a hand-written list: the policy model, the decision's values, the `Store`
 * contract and `MemoryStore`, and what a client reads off the wire. Every name is a semver promise.
 */

// The policy model, A2A methods and the decision's values.
export {
  type A2AMethod,
  ALL_A2A_METHODS,
  BUILTIN_SCOPES,
  type Clock,
  type ConcurrencyPolicy,
  compilePolicies,
  type Decision,
  type DecisionInput,
  type HoldOptions,
  type OverloadPolicy,
  type Policy,
  PolicyError,
  type RatePolicy,
  REASONS,
  type Rejection,
  toA2AMethod,
} from './core/index.js';
// The store contract and the in-process store.
export {
  MemoryStore,
  type MemoryStoreOptions,
} from './store/memory-store.js';
export type { Store } from './store/store.js';
// What a client reads off the wire: hints, headers, error bodies, google.rpc details.
export {
  decodeStatus,
  type ErrorInfo,
  encodeRestRejection,
  encodeStatus,
  extractRetryHint,
  findDetail,
  GRPC_CODES,
  GRPC_METADATA,
  parseErrorBody,
  parseRetryAfter,
  type RetryHint,
  rateLimitHeaders,
  readRateLimitFields,
  readRateLimitHeaders,
  type Status,
  statusToJson,
} from './wire/index.js';
