/**
 * @module testing
 * The `a2a-ratelimit/testing` entry, a hand-written list: helpers for users' own tests — a manual
 * clock, the store contract suite and example fixtures.
 */

export { exampleAgentCard } from './example-agent-card.js';
export { ManualClock } from './manual-clock.js';
export { STORE_CONTRACT } from './store-contract.js';
export { textMessage } from './text-message.js';
