/**
 * @module redis
 * `a2a-ratelimit/redis`: the store several agent replicas share through Redis (single node or
 * Cluster), its Lua decision script, and the client adapter interface. ioredis is an optional
 * peer: this subpath imports no client, you pass one in.
 */
export * from './decision-script.js';
export * from './insurance-policies.js';
export * from './redis-like.js';
export * from './redis-store.js';
export * from './task-event-relay.js';
