/**
 * @module scaled-time
 * `createScaledTime`: one clock running N times faster than real time and its sleep, for `demo
 * --time-scale N`.
 */

import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from 'a2a-ratelimit';
import type { RetrySchedulerOptions } from 'a2a-ratelimit/client';

/** A cancellable wait of `ms` milliseconds, as the client's `sleep` option takes it. */
export type Sleep = NonNullable<RetrySchedulerOptions['sleep']>;

/**
 * Waits `ms` real milliseconds; rejects with `signal.reason` once `signal` aborts.
 *
 * @example
 * ```ts
 * await realSleep(250, AbortSignal.timeout(1_000));
 * ```
 */
export const realSleep: Sleep = async (ms, signal) => {
  try {
    await delay(Math.max(0, ms || 0), undefined, signal === undefined ? {} : { signal });
  } catch (error) {
    throw signal?.aborted ? signal.reason : error;
  }
};

/**
 * A scaled clock and the matching sleep.
 *
 * @example
 * ```ts
 * const time: ScaledTime = createScaledTime(10);
 * await time.sleep(20_000); // about 2 s of real time
 * ```
 */
export interface ScaledTime {
  /** How many times faster than real time. */
  readonly scale: number;
  /** Scaled now, ms (starts at the real `Date.now()` of creation). */
  readonly clock: Clock;
  /** Waits `ms` scaled milliseconds (ms / scale real milliseconds); cancellable. */
  readonly sleep: Sleep;
  /**
   * Stops the clock until {@link ScaledTime.resume}: what happens meanwhile happens at one instant
   * (the demo's "30 calls at once", however long the machine takes to send them).
   */
  freeze(): void;
  /** Lets the clock run again from where it stopped (no jump). */
  resume(): void;
}

/**
 * Creates a clock running `scale` times faster than real time (1 = real time), starting at
 * `startMs` (default: now): `nowMs = startMs + (real elapsed) × scale`; `sleep(ms)` waits
 * `ms / scale` real milliseconds and never resolves before the scaled clock has reached its target.
 *
 * @example
 * ```ts
 * const time = createScaledTime(4);
 * const limiter = createLimiter({ policies, clock: time.clock, domain: 'agents.example.com' });
 * const fetchImpl = createRetryingFetch({ clock: time.clock, sleep: time.sleep });
 * ```
 */
export function createScaledTime(scale: number, startMs: number = Date.now()): ScaledTime {
  if (!Number.isFinite(scale) || scale <= 0) {
    throw new RangeError(`time scale must be a positive number, got ${scale}`);
  }
  // performance.now() for resolution finer than a millisecond (a scaled ms is 1/scale real ms).
  let realStartMs = performance.now();
  let frozenAtMs: number | undefined;
  const running = (): number => startMs + (performance.now() - realStartMs) * scale;
  const clock: Clock = { nowMs: () => frozenAtMs ?? running() };
  const sleep: Sleep = async (ms, signal) => {
    const targetMs = clock.nowMs() + Math.max(0, ms || 0);
    for (;;) {
      const leftMs = targetMs - clock.nowMs();
      if (leftMs <= 0) {
        if (signal?.aborted) throw signal.reason;
        return;
      }
      // Timers may fire a fraction of a millisecond early; loop until the scaled clock is there.
      await realSleep(Math.max(1, Math.ceil(leftMs / scale)), signal);
    }
  };
  const freeze = (): void => {
    frozenAtMs ??= running();
  };
  const resume = (): void => {
    if (frozenAtMs === undefined) return;
    // Shift the real origin so the running clock continues from the frozen instant.
    realStartMs = performance.now() - (frozenAtMs - startMs) / scale;
    frozenAtMs = undefined;
  };
  return { scale, clock, sleep, freeze, resume };
}
