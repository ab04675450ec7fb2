/**
 * @module a2a-ratelimit
 * The main entry: the policy model, the decision values, the in-memory store and the wire
 * encodings. Adapters live under their own subpaths (`/server`, `/client`, `/redis`, …).
 */
export * from './core/index.js';
