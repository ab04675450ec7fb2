/**
 * @module client
 * The `a2a-ratelimit/client` entry: a client that waits exactly as long as the agent asks.
 * `createRetryingFetch` plugs into the SDK's JSON-RPC and REST transports; `RetryScheduler` runs
 * any transport with the same rules and pacers; `planRetry` is the rules as a pure function. The
 * gRPC interceptor lives in `a2a-ratelimit/client/grpc` so that this entry never loads grpc-js.
 */
export * from './agent-card-targets.js';
export * from './caller-fingerprint.js';
export * from './create-retrying-fetch.js';
export * from './identify-a2a-request.js';
export * from './plan-retry.js';
export * from './retry-errors.js';
export * from './retry-scheduler.js';
export * from './sleep.js';
