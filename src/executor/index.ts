/**
 * @module executor
 * The `a2a-ratelimit/executor` entry, a hand-written list: `callWithinLimits`, a limited call
 * retried inside a task, and the error it gives up with.
 */
export {
  type CallWithinLimitsOptions,
  callWithinLimits,
  LimitedCallFailedError,
} from './call-within-limits.js';
