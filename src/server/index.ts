/**
 * @module server
 * Server side of a2a-ratelimit: `createLimiter` (identity → one decision → encoding, shared by all
 * adapters), task and stream leases, deduplication, the overload signal and the agent-card
 * extension. Adapters: `a2a-ratelimit/server/express`, `a2a-ratelimit/server/grpc`; metrics:
 * `a2a-ratelimit/server/metrics`.
 */
export * from './caller-key.js';
export * from './card-extension.js';
export * from './event-loop-monitor.js';
export * from './find-task-by-message-id.js';
export * from './limiter.js';
export * from './operator-domain.js';
export * from './pending-messages.js';
export * from './rest-route.js';
export * from './task-lease-tracker.js';
export * from './task-usage.js';
