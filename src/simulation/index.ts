/**
 * @module simulation
 * What a simulation of rate-limited callers runs on, without waiting in real time: virtual time
 * (a clock and a `sleep` that move only when timers fire), a seeded random source, and the
 * worked example's policy (60 messages per minute per caller, burst 10). The CLI's `simulate` and
 * `demo` use it; `a2a-ratelimit/testing` re-exports it for tests.
 */

export * from './seeded-random.js';
export * from './virtual-time.js';
export * from './worked-example-policy.js';
