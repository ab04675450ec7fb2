/**
 * @module virtual-time
 * Virtual time lives in `src/simulation/virtual-time.ts` (public as `a2a-ratelimit/simulation`);
 * re-exported here for the tests that import it from the testing folder.
 */

export * from '../simulation/virtual-time.js';
