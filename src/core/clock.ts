/**
 * @module clock
 * The `Clock` contract every component takes instead of reading the wall clock.
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
