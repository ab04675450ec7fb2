/**
 * @module manual-clock
 * `ManualClock`: a clock that moves only when told to, for tests of anything that takes a `Clock`.
 */

import type { Clock } from '../core/clock.js';

/**
 * A clock that stands still until `advance` or `set` moves it.
 *
 * @example
 * ```ts
 * const clock = new ManualClock(0);
 * clock.advance(1_500);
 * clock.nowMs(); // 1500
 * ```
 */
export class ManualClock implements Clock {
  private currentMs: number;

  /** @param startMs Initial time, ms. */
  constructor(startMs = 0) {
    this.currentMs = startMs;
  }

  /** Current time, ms. */
  nowMs(): number {
    return this.currentMs;
  }

  /**
   * Moves time forward by `ms` (≥ 0).
   *
   * @example
   * ```ts
   * clock.advance(1_000);
   * ```
   */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance: ms must be ≥ 0, got ${ms}`);
    this.currentMs += ms;
  }

  /**
   * Sets the time to `ms`, which must not be earlier than now.
   *
   * @example
   * ```ts
   * clock.set(20_000);
   * ```
   */
  set(ms: number): void {
    if (!(ms >= this.currentMs)) {
      throw new RangeError(`ManualClock.set: time cannot go back (${ms} < ${this.currentMs})`);
    }
    this.currentMs = ms;
  }

  /**
   * Steps the time back by `ms` (≥ 0), as a wall clock does when NTP or an operator corrects it:
   * for tests of what a store does with state written before the step.
   *
   * @example
   * ```ts
   * clock.stepBack(3_600_000); // one hour
   * ```
   */
  stepBack(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.stepBack: ms must be ≥ 0, got ${ms}`);
    this.currentMs -= ms;
  }
}
