/**
 * @module simulation
 * The `a2a-ratelimit/simulation` entry, a hand-written list: virtual time, a seeded random source,
 * and the worked example's policy.
 */

export { seededRandom } from './seeded-random.js';
export { createVirtualTime, type VirtualClock } from './virtual-time.js';
export { WORKED_EXAMPLE_POLICY } from './worked-example-policy.js';
