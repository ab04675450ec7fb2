/**
 * @module client
 * The `a2a-ratelimit/client` entry, a hand-written list: a client that waits exactly as long as the
 * agent asks, its typed errors' guards. Never loads grpc-js (see `client/grpc`).
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
