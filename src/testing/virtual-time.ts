/**
 * @module virtual-time
 * Virtual time for tests and simulations: a clock that moves only when timers are fired, and a
 * `sleep(ms, signal)` whose timers live in a queue instead of the event loop. `advance(ms)` and
 * `runUntilIdle()` fire due timers in time order (ties in creation order), letting every promise
 * chain settle between two timers, so code that waits runs exactly as it would in real time,
 * without waiting. With `autoAdvance`, time jumps to the next timer whenever the process has
 * nothing else to do — handy when real I/O (a loopback server) is involved.
 */

import type { Clock } from '../core/clock.js';

interface Timer {
  readonly dueMs: number;
  readonly seq: number;
  readonly resolve: () => void;
}

/**
 * Options of {@link createVirtualTime}.
 *
 * @example
 * ```ts
 * const vt = createVirtualTime({ startMs: 1_700_000_000_000, autoAdvance: true });
 * ```
 */
export interface VirtualTimeOptions {
  /** Initial time, ms. @defaultValue 0 */
  readonly startMs?: number;
  /**
   * Fire the earliest timer (moving time to it) whenever the event loop is otherwise idle, without
   * calls to `advance` / `runUntilIdle`. @defaultValue false
   */
  readonly autoAdvance?: boolean;
}

/**
 * A virtual clock with its own timers. Pass `clock` (or the object itself) where a `Clock` is
 * taken and `sleep` where a `Sleep` is taken.
 *
 * @example
 * ```ts
 * const vt = createVirtualTime();
 * const done = vt.sleep(12_000).then(() => vt.nowMs());
 * await vt.runUntilIdle();
 * await done; // 12_000
 * ```
 */
export class VirtualClock implements Clock {
  private currentMs: number;
  private seq = 0;
  private readonly timers: Timer[] = [];
  private readonly autoAdvance: boolean;
  private autoScheduled = false;
  private running = false;

  constructor(options: VirtualTimeOptions = {}) {
    this.currentMs = options.startMs ?? 0;
    this.autoAdvance = options.autoAdvance ?? false;
  }

  /** Current virtual time, ms. */
  nowMs(): number {
    return this.currentMs;
  }

  /** This object as a plain `Clock`. */
  get clock(): Clock {
    return this;
  }

  /** Timers not yet fired. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * A `Sleep` on virtual time: resolves when time reaches now + `ms` (negative / NaN: now);
   * rejects with `signal.reason` when `signal` aborts.
   *
   * @example
   * ```ts
   * await Promise.all([vt.sleep(1_000), vt.runUntilIdle()]);
   * ```
   */
  readonly sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const timer: Timer = {
        dueMs: this.currentMs + Math.max(0, ms || 0),
        seq: this.seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        const i = this.timers.indexOf(timer);
        if (i >= 0) this.timers.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.insert(timer);
      if (this.autoAdvance) this.scheduleAuto();
    });

  /**
   * Moves time forward by `ms`, firing every timer due on the way in time order and letting
   * promise chains settle after each.
   *
   * @example
   * ```ts
   * await vt.advance(5_000);
   * ```
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`VirtualClock.advance: ms must be ≥ 0, got ${ms}`);
    const targetMs = this.currentMs + ms;
    await settle();
    for (;;) {
      const next = this.timers[0];
      if (next === undefined || next.dueMs > targetMs) break;
      this.fireNext();
      await settle();
    }
    this.currentMs = Math.max(this.currentMs, targetMs);
    await settle();
  }

  /**
   * Fires timers in time order until none is left (new timers created meanwhile included).
   * Throws after `maxTimers` firings, which usually means a loop that never ends.
   *
   * @example
   * ```ts
   * const result = call();
   * await vt.runUntilIdle();
   * await result;
   * ```
   */
  async runUntilIdle(maxTimers = 1_000_000): Promise<void> {
    await settle();
    for (let fired = 0; this.timers.length > 0; fired++) {
      if (fired >= maxTimers) {
        throw new Error(`VirtualClock.runUntilIdle: more than ${maxTimers} timers fired`);
      }
      this.fireNext();
      await settle();
    }
  }

  private insert(timer: Timer): void {
    // Keep the queue sorted by (dueMs, seq); timers are few, insertion is linear from the end.
    let i = this.timers.length;
    while (i > 0) {
      const prev = this.timers[i - 1] as Timer;
      if (prev.dueMs < timer.dueMs || (prev.dueMs === timer.dueMs && prev.seq < timer.seq)) break;
      i--;
    }
    this.timers.splice(i, 0, timer);
  }

  private fireNext(): void {
    const timer = this.timers.shift();
    if (timer === undefined) return;
    this.currentMs = Math.max(this.currentMs, timer.dueMs);
    timer.resolve();
  }

  private scheduleAuto(): void {
    if (this.autoScheduled || this.running) return;
    this.autoScheduled = true;
    void this.autoRun();
  }

  private async autoRun(): Promise<void> {
    await settle();
    this.autoScheduled = false;
    this.running = true;
    try {
      // Fire one timer per idle turn so real I/O in between still gets its turn.
      while (this.timers.length > 0) {
        this.fireNext();
        await settle();
      }
    } finally {
      this.running = false;
    }
  }
}

/** Lets every queued promise reaction run (one macrotask turn). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Creates a {@link VirtualClock}: `nowMs()`, `sleep(ms, signal)`, `advance(ms)`, `runUntilIdle()`.
 *
 * @example
 * ```ts
 * const vt = createVirtualTime({ startMs: 0 });
 * const scheduler = new RetryScheduler({ clock: vt, sleep: vt.sleep });
 * ```
 */
export function createVirtualTime(options: VirtualTimeOptions = {}): VirtualClock {
  return new VirtualClock(options);
}
