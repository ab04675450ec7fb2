/**
 * @module testing
 * Helpers users can reuse in their own tests: a manual clock and the store contract suite.
 */

export * from './example-agent-card.js';
export * from './fake-incoming-request.js';
export * from './manual-clock.js';
export * from './store-contract.js';
export * from './text-message.js';
export * from './virtual-time.js';
export * from './worked-example-policy.js';
