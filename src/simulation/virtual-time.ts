/**
 * @module virtual-time
 * Virtual time for tests and simulations: a clock that moves only when timers fire, and a `sleep`
 * whose timers live in a queue, not the event loop.
 */

import type { Clock } from '../core/clock.js';

interface Timer {
  readonly dueMs: number;
  readonly seq: number;
  readonly resolve: () => void;
  /** Aborted before it fired: left in the heap, skipped when it reaches the top. */
  cancelled: boolean;
}

/** Whether `a` fires before `b`: earlier due time, ties in creation order. */
function before(a: Timer, b: Timer): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.seq < b.seq);
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
  /** Binary min-heap by (dueMs, seq); may hold cancelled timers. */
  private readonly heap: Timer[] = [];
  /** Timers in the heap that are not cancelled. */
  private live = 0;
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
    return this.live;
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
        cancelled: false,
      };
      const onAbort = (): void => {
        if (!timer.cancelled) {
          timer.cancelled = true;
          this.live--;
          if (this.heap.length > 2 * this.live + 64) this.compact();
        }
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
      const next = this.peek();
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
    for (let fired = 0; this.live > 0; fired++) {
      if (fired >= maxTimers) {
        throw new Error(`VirtualClock.runUntilIdle: more than ${maxTimers} timers fired`);
      }
      this.fireNext();
      await settle();
    }
  }

  private insert(timer: Timer): void {
    const heap = this.heap;
    let i = heap.length;
    heap.push(timer);
    this.live++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const up = heap[parent] as Timer;
      if (!before(timer, up)) break;
      heap[i] = up;
      i = parent;
    }
    heap[i] = timer;
  }

  /** Drops cancelled timers; a sorted array is a valid heap. */
  private compact(): void {
    const kept = this.heap.filter((t) => !t.cancelled);
    kept.sort((a, b) => a.dueMs - b.dueMs || a.seq - b.seq);
    this.heap.length = 0;
    this.heap.push(...kept);
  }

  /** The earliest live timer, after dropping cancelled ones from the top. */
  private peek(): Timer | undefined {
    let top = this.heap[0];
    while (top?.cancelled === true) {
      this.popTop();
      top = this.heap[0];
    }
    return top;
  }

  private popTop(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    const n = heap.length;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && before(heap[right] as Timer, heap[left] as Timer) ? right : left;
      const down = heap[child] as Timer;
      if (!before(down, last)) break;
      heap[i] = down;
      i = child;
    }
    heap[i] = last;
  }

  private fireNext(): void {
    const timer = this.peek();
    if (timer === undefined) return;
    this.popTop();
    this.live--;
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
      while (this.live > 0) {
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
