/**
 * @module event-loop-monitor
 * Event-loop delay for the overload guard: `perf_hooks.monitorEventLoopDelay` sampled on an
 * unref'd timer, so reading the current delay on the hot path is a field read.
 */

import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * A source of the current event-loop delay, ms.
 */
export interface EventLoopDelaySource {
  /** The latest sampled delay (p99 over the last sample period), ms. */
  delayMs(): number;
  /** Stops sampling. */
  close(): void;
}

/**
 * Options of `monitorEventLoop`.
 */
export interface EventLoopMonitorOptions {
  /** Histogram resolution, ms; default 10. */
  readonly resolutionMs?: number;
  /** How often the p99 is read and the histogram reset, ms; default 500. */
  readonly sampleEveryMs?: number;
}

/**
 * Starts sampling the event-loop delay. The reported value is the p99 delay of the last sample
 * period (ms), or of the period so far when it exceeds the last one (so a stall is seen while it
 * is happening, not half a second later).
 *
 * @example
 * ```ts
 * const monitor = monitorEventLoop({ sampleEveryMs: 250 });
 * monitor.delayMs(); // e.g. 3.2
 * monitor.close();
 * ```
 */
export function monitorEventLoop(options: EventLoopMonitorOptions = {}): EventLoopDelaySource {
  const resolutionMs = Math.max(1, Math.round(options.resolutionMs ?? 10));
  const sampleEveryMs = Math.max(10, options.sampleEveryMs ?? 500);
  const histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: resolutionMs });
  histogram.enable();
  let lastMs = 0;
  const timer = setInterval(() => {
    lastMs = Math.max(0, histogram.percentile(99) / 1e6 - resolutionMs);
    histogram.reset();
  }, sampleEveryMs);
  timer.unref();
  return {
    delayMs: () => {
      const current = histogram.count > 0 ? histogram.max / 1e6 - resolutionMs : 0;
      return Math.max(lastMs, current);
    },
    close: () => {
      clearInterval(timer);
      histogram.disable();
    },
  };
}
