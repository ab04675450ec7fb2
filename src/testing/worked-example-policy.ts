/**
 * @module worked-example-policy
 * The worked example's policy lives in `src/simulation/worked-example-policy.ts` (public as
 * `a2a-ratelimit/simulation`); re-exported here for the store contract and the tests.
 */

export * from '../simulation/worked-example-policy.js';
