/**
 * @module executor
 * Helpers for agent executors: an internal limited call retried inside the task with status
 * updates, ending the task FAILED with a reason when it gives up.
 */
export * from './call-within-limits.js';
