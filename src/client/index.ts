/**
 * @module client
 * The `a2a-ratelimit/client` entry, a hand-written list: a client that waits exactly as long as
 * the agent asks. `createRetryingFetch` plugs into the SDK's JSON-RPC and REST transports;
 * `RetryScheduler` runs any transport with the same rules and pacers; the typed errors and their
 * guards say why a call gave up. Pacers and the rules as a pure function stay internal.
 * The gRPC interceptor lives in `a2a-ratelimit/client/grpc` so that this entry never loads
 * grpc-js.
 */
export { createRetryingFetch, type RetryingFetchOptions } from './create-retrying-fetch.js';
export {
  isAgentOverloadedError,
  isRateLimitedError,
  isRetryBudgetExceededError,
  retryErrorOf,
} from './retry-errors.js';
export {
  type Attempt,
  RetryScheduler,
  type RetrySchedulerOptions,
} from './retry-scheduler.js';
