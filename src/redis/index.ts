/**
 * @module redis
 * `a2a-ratelimit/redis`, a hand-written list: the store several agent replicas share through
 * Redis (single node or Cluster) with its options, failure policies and timeout error, the client
 * adapter interface, and the task-event relay. The Lua script and its modes stay internal.
 * ioredis is an optional peer: this subpath imports no client, you pass one in.
 */
export { RECOMMENDED_IOREDIS_OPTIONS, type RedisLike } from './redis-like.js';
export { RedisStore } from './redis-store.js';
export type { RedisStoreOptions } from './redis-store-options.js';
export { StoreTimeoutError } from './store-timeout-error.js';
export { createTaskEventRelay } from './task-event-relay.js';
export type { TaskEventRelayOptions } from './task-event-relay-options.js';
