/**
 * @module event-loop-monitor
 * Event-loop delay for the overload guard: timer lateness sampled on unref'd timers and smoothed,
 * read on the hot path as a field.
 */

import type { Clock } from '../core/clock.js';
import { systemClock } from '../platform/system-clock.js';

/**
 * A source of the current event-loop delay, ms.
 */
export interface EventLoopDelaySource {
  /** The smoothed delay (see {@link monitorEventLoop}), ms. */
  delayMs(): number;
  /** Stops sampling. */
  close(): void;
}

/**
 * Options of `monitorEventLoop`.
 */
export interface EventLoopMonitorOptions {
  /** How often the delay is measured (a timer's lateness), ms; default 10. */
  readonly resolutionMs?: number;
  /** How often the longest delay measured is taken as one sample, ms; default 500. */
  readonly sampleEveryMs?: number;
  /**
   * The reported delay is the median of the samples of the last `windowMs`; default 5,000 (ten
   * samples). A delay trips an overload policy only once it lasted more than half the window.
   */
  readonly windowMs?: number;
  /** Nothing is reported (0) until this long after the monitor started, ms; default 10,000. */
  readonly warmUpMs?: number;
}

/** Defaults of {@link EventLoopMonitorOptions}. */
export const DEFAULT_EVENT_LOOP_MONITOR = {
  resolutionMs: 10,
  sampleEveryMs: 500,
  windowMs: 5_000,
  warmUpMs: 10_000,
} as const;

/**
 * The smoothing of the event-loop signal, fed one sample at a time: the first `warmUpSamples`
 * samples are dropped (start-up: loading, JIT, a cold cache), then the value is the (lower)
 * median of the last `windowSamples`. Pure: no clock, no timer; the value is computed when a
 * sample arrives, so reading it is a field read. The window starts as zeros.
 *
 * @example
 * ```ts
 * const s = new SmoothedDelay(10, 2);
 * s.record(900); s.record(900); // warm-up: dropped
 * s.record(3); s.record(1200); s.record(4);
 * s.delayMs(); // 4: one stall does not move the median
 * ```
 */
export class SmoothedDelay {
  /** The window, zeros until samples arrive (so one stall right after the warm-up is one of many). */
  private readonly samples: number[];
  private next = 0;
  private seen = 0;
  private value = 0;

  constructor(
    private readonly windowSamples: number,
    private readonly warmUpSamples: number,
  ) {
    this.samples = new Array<number>(windowSamples).fill(0);
  }

  /** Takes one sample, ms. */
  record(sampleMs: number): void {
    this.seen += 1;
    if (this.seen <= this.warmUpSamples) return;
    this.samples[this.next] = sampleMs;
    this.next = (this.next + 1) % this.windowSamples;
    const sorted = [...this.samples].sort((a, b) => a - b);
    this.value = sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
  }

  /** The smoothed delay, ms (0 during the warm-up). */
  delayMs(): number {
    return this.value;
  }
}

/**
 * Starts sampling the event-loop delay. A timer every `resolutionMs` measures how late it fires;
 * every `sampleEveryMs` the longest delay of the period is one sample; the reported value is the
 * median of the samples of the last `windowMs`, and 0 during the first `warmUpMs`. A single stall
 * (even a long one) or a slow start-up is not overload; a delay lasting more than half the window
 * is. (`perf_hooks.monitorEventLoopDelay` is not used: resetting it per period drops the first
 * delay after the reset, which under a loop blocked in long stretches is the only one, so the
 * busiest loop read as idle.)
 *
 * @example
 * ```ts
 * const monitor = monitorEventLoop({ sampleEveryMs: 250 });
 * monitor.delayMs(); // e.g. 3
 * monitor.close();
 * ```
 */
export function monitorEventLoop(
  options: EventLoopMonitorOptions = {},
  clock: Clock = systemClock,
): EventLoopDelaySource {
  const d = DEFAULT_EVENT_LOOP_MONITOR;
  const resolutionMs = Math.max(1, Math.round(options.resolutionMs ?? d.resolutionMs));
  const sampleEveryMs = Math.max(10, options.sampleEveryMs ?? d.sampleEveryMs);
  const windowSamples = Math.max(1, Math.round((options.windowMs ?? d.windowMs) / sampleEveryMs));
  const warmUpSamples = Math.max(0, Math.ceil((options.warmUpMs ?? d.warmUpMs) / sampleEveryMs));
  const smoothed = new SmoothedDelay(windowSamples, warmUpSamples);
  let expectedMs = clock.nowMs() + resolutionMs;
  let periodMaxMs = 0;
  const ticker = setInterval(() => {
    const nowMs = clock.nowMs();
    const lateMs = nowMs - expectedMs;
    if (lateMs > periodMaxMs) periodMaxMs = lateMs;
    expectedMs = nowMs + resolutionMs;
  }, resolutionMs);
  ticker.unref();
  const sampler = setInterval(() => {
    smoothed.record(periodMaxMs);
    periodMaxMs = 0;
  }, sampleEveryMs);
  sampler.unref();
  return {
    delayMs: () => smoothed.delayMs(),
    close: () => {
      clearInterval(ticker);
      clearInterval(sampler);
    },
  };
}
