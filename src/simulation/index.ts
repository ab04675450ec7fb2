/**
 * @module simulation
 * What a simulation of rate-limited callers runs on, without waiting in real time, a hand-written
 * list: virtual time (a clock and a `sleep` that move only when timers fire), a seeded random
 * source, and the worked example's policy (60 messages per minute per caller, burst 10). The
 * CLI's `simulate` and `demo` use it; tests import it from here too (its one public home).
 */

export { seededRandom } from './seeded-random.js';
export { createVirtualTime, type VirtualClock } from './virtual-time.js';
export { WORKED_EXAMPLE_POLICY } from './worked-example-policy.js';
