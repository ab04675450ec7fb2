/**
 * @module testing
 * Helpers users can reuse in their own tests, a hand-written list: a manual clock, the store
 * contract suite and example fixtures. Virtual time, `seededRandom` and the worked example's
 * policy have one home, `a2a-ratelimit/simulation` (the CLI uses them, and production code never
 * imports this entry). `fake-incoming-request.ts` stays out: it serves one unit test and one
 * bench, not users.
 */

export { exampleAgentCard } from './example-agent-card.js';
export { ManualClock } from './manual-clock.js';
export { STORE_CONTRACT } from './store-contract.js';
export { textMessage } from './text-message.js';
