/**
 * @module redis
 * `a2a-ratelimit/redis`: the store several agent replicas share through Redis (single node or
 * Cluster), its Lua decision script, the client adapter interface, and the task-event relay.
 * ioredis is an optional peer: this subpath imports no client, you pass one in.
 */
export * from './decision-script.js';
export { STORE_UNAVAILABLE_POLICY } from './failure-mode.js';
export * from './insurance-policies.js';
export * from './redis-like.js';
export * from './redis-store.js';
export {
  FAILURE_POLICIES,
  type FailurePolicy,
  type ModeChangeEvent,
  type RedisStoreLogger,
  type RedisStoreMode,
  type RedisStoreOptions,
  type RedisStoreStats,
} from './redis-store-options.js';
export * from './store-timeout-error.js';
export * from './task-event-relay.js';
export * from './task-event-relay-options.js';
