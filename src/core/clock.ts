/**
 * @module clock
 * The time contract every component takes instead of reading the wall clock. Production passes the
 * system clock, tests and the simulation a manual or virtual one, and the same code runs in all
 * three. (Waiting, which needs timers and `AbortSignal`, is the client's `Sleep`.)
 */

/**
 * A source of "now" in integer or fractional milliseconds since an epoch of the clock's choosing
 * (the system clock uses the Unix epoch).
 *
 * @example
 * ```ts
 * const clock: Clock = { nowMs: () => 1_000 };
 * ```
 */
export interface Clock {
  /** Current time, milliseconds. */
  nowMs(): number;
}
