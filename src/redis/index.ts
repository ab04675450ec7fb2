/**
 * @module redis
 * The `a2a-ratelimit/redis` entry, a hand-written list: the store replicas share through Redis, its
 * options and errors, and the task-event relay. Imports no Redis client.
 */
export { RECOMMENDED_IOREDIS_OPTIONS, type RedisLike } from './redis-like.js';
export { RedisStore } from './redis-store.js';
export type { RedisStoreOptions } from './redis-store-options.js';
export { StoreTimeoutError } from './store-timeout-error.js';
export { createTaskEventRelay } from './task-event-relay.js';
export type { TaskEventRelayOptions } from './task-event-relay-options.js';
