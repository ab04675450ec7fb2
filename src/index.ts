/**
 * @module a2a-ratelimit
 * The main entry: the policy model and decision (core), the in-memory store, and the wire
 * encodings (google.rpc details, the three binding encoders/decoders, `extractRetryHint`).
 * Adapters live under their own subpaths (`/server`, `/client`, `/redis`, …).
 */
export * from './core/index.js';
export * from './store/memory-store.js';
export type * from './store/store.js';
export * from './wire/index.js';
