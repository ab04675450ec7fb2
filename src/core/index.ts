/**
 * @module core
 * Pure policy model and decision: no I/O, no clock reads, no Node APIs.
 */
export * from './a2a-methods.js';
export * from './clock.js';
export * from './decide.js';
export * from './gcra.js';
export * from './policy.js';
export * from './rejection.js';
