/**
 * @module system-clock
 * `systemClock`, the one wall clock: `Date.now()` behind the `Clock` contract.
 */

import type { Clock } from '../core/clock.js';

/**
 * The wall clock: `Date.now()`, milliseconds since the Unix epoch. Read through the global `Date` at
 * each call (not a captured `Date.now`), so fake timers in users' tests (`vi.useFakeTimers`,
 * `@sinonjs/fake-timers`) move it as they move everything else.
 *
 * @example
 * ```ts
 * const scheduler = new RetryScheduler({ clock: systemClock });
 * ```
 */
export const systemClock: Clock = Object.freeze({ nowMs: () => Date.now() });
