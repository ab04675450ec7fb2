/**
 * @module executor
 * Helpers for agent executors, a hand-written list: an internal limited call retried inside the
 * task with status updates (`callWithinLimits`), ending the task FAILED with a reason when it
 * gives up (`LimitedCallFailedError`).
 */
export {
  type CallWithinLimitsOptions,
  callWithinLimits,
  LimitedCallFailedError,
} from './call-within-limits.js';
