/**
 * @module system-clock
 * The one wall clock of the server side: `Date.now()` behind the `Clock` contract. It lives here,
 * outside the pure core (which never reads a clock), where the stores, the Redis store and the
 * server may all import it. (The client, which may not import the store layer, has its own in
 * `client/sleep.ts`.)
 */

import type { Clock } from '../core/clock.js';

/** The wall clock: `Date.now()`, milliseconds since the Unix epoch. */
export const systemClock: Clock = Object.freeze({ nowMs: () => Date.now() });
