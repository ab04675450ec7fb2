/**
 * @module system-clock
 * The one wall clock: `Date.now()` behind the `Clock` contract. `src/platform` is the leaf every
 * impure layer may import (stores, the Redis store, the server, the client, push) and the pure
 * ones may not (`core`, `wire`, `simulation` never read a clock); `biome.json` enforces both.
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
