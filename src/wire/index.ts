/**
 * @module wire
 * Pure wire encodings of a `Rejection` (REST, JSON-RPC, gRPC, google.rpc details, headers) and
 * `extractRetryHint`. No Node APIs.
 */
export * from './decoded-rejection.js';
export * from './duration.js';
export * from './error-body.js';
export * from './error-source.js';
export * from './extract-retry-hint.js';
export * from './google-rpc.js';
export * from './grpc-rejection.js';
export * from './headers-like.js';
export * from './json-rpc-rejection.js';
export * from './proto-binary.js';
export * from './proto-json.js';
export * from './rate-limit-card.js';
export * from './ratelimit-headers.js';
export * from './rejection-details.js';
export * from './rest-rejection.js';
export * from './retry-after.js';
export * from './retry-hint.js';
