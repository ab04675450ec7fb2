/**
 * @module testing
 * Helpers users can reuse in their own tests: a manual clock, the store contract suite, example
 * fixtures, and everything of `a2a-ratelimit/simulation` (virtual time, `seededRandom`, the worked
 * example's policy). `fake-incoming-request.ts` stays out: it serves one unit test and one bench,
 * not users.
 */

export * from '../simulation/index.js';
export * from './example-agent-card.js';
export * from './manual-clock.js';
export * from './store-contract.js';
export * from './text-message.js';
