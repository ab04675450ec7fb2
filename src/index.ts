/**
 * @module a2a-ratelimit
 * The main entry, a hand-written list: the policy model and its validation, the decision's values
 * (`Decision`, `Rejection`), the `Store` contract and `MemoryStore`, and what a client or a probe
 * reads off the wire — `extractRetryHint`, the `RateLimit` / `Retry-After` headers, the error
 * body and the google.rpc details. Encoders, the decision's arithmetic (GCRA, leases, holds) and
 * the card reader stay internal. Adapters live under their own subpaths (`/server`, `/client`,
 * `/redis`, …; docs/architecture.md, "Layers"). Every name here is a semver promise: add one only
 * for a user's need (`api/*.api.md` shows the change).
 */

// The policy model, A2A methods and the decision's values.
export {
  type A2AMethod,
  type Admission,
  ALL_A2A_METHODS,
  BUILTIN_SCOPES,
  type Clock,
  type CompiledPolicy,
  type CompiledPolicySet,
  type ConcurrencyPolicy,
  compilePolicies,
  type Decision,
  type DecisionInput,
  type HoldOptions,
  isPolicyError,
  type LeaseRef,
  type LimitState,
  MESSAGE_METHODS,
  type OverloadPolicy,
  type Policy,
  PolicyError,
  type RatePolicy,
  REASONS,
  type Rejection,
  type RejectionKind,
  type RejectionReason,
  toA2AMethod,
} from './core/index.js';
// The store contract and the in-process store.
export {
  MemoryStore,
  type MemoryStoreOptions,
} from './store/memory-store.js';
export type {
  Store,
  SynchronousStore,
} from './store/store.js';
// What a client reads off the wire: hints, headers, error bodies, google.rpc details.
export {
  A2A_DOMAIN,
  type Detail,
  type Duration,
  decodeStatus,
  type ErrorBody,
  type ErrorInfo,
  encodeRestRejection,
  encodeStatus,
  extractRetryHint,
  findDetail,
  GRPC_CODES,
  GRPC_METADATA,
  type GrpcRejectionStatus,
  type HeadersLike,
  type HttpRejectionResponse,
  headerLookup,
  parseErrorBody,
  parseRetryAfter,
  type QuotaFailure,
  type RejectionEncodeOptions,
  type RetryHint,
  type RetryInfo,
  type RetrySource,
  rateLimitHeaders,
  readRateLimitFields,
  readRateLimitHeaders,
  retryInfoDelayMs,
  type Status,
  statusToJson,
  tryDecodeStatus,
} from './wire/index.js';
