/**
 * @module deadline-timer
 * `DeadlineTimer`: one timer for the deadline of every Redis call in flight.
 */

import { StoreTimeoutError } from './store-timeout-error.js';

/**
 * A deadline for one store call; `expire` runs once if the call has not settled by then.
 *
 * @internal
 */
export interface Waiter {
  /** Measured from the write (re-based when a coalesced call is sent), ms of `performance.now`. */
  deadlineMs: number;
  done: boolean;
  readonly expire: () => void;
}

/**
 * Deadlines of calls in flight, in deadline order (insertion order; one timer for all of them,
 * looking at the oldest only). A deadline expires a call only after the poll phase has delivered
 * every reply already received.
 *
 * @internal
 */
export class DeadlineTimer {
  /** The deadline of every call, ms after its write. */
  readonly timeoutMs: number;
  private readonly waiters = new Set<Waiter>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
  }

  /** `promise`, or a {@link StoreTimeoutError} when it has not settled `timeoutMs` from now. */
  withTimeout<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiter = this.track(() => reject(new StoreTimeoutError(this.timeoutMs)));
      promise.then(
        (value) => {
          if (this.settle(waiter)) resolve(value);
        },
        (error: unknown) => {
          if (this.settle(waiter)) reject(error);
        },
      );
    });
  }

  /** Registers a deadline `timeoutMs` from now; {@link DeadlineTimer.settle} removes it. */
  track(expire: () => void): Waiter {
    const waiter: Waiter = { deadlineMs: performance.now() + this.timeoutMs, done: false, expire };
    this.waiters.add(waiter);
    if (this.timer === undefined) this.arm(this.timeoutMs);
    return waiter;
  }

  /** Marks a call settled; false when its deadline already expired it. */
  settle(waiter: Waiter): boolean {
    if (waiter.done) return false;
    waiter.done = true;
    this.waiters.delete(waiter);
    return true;
  }

  /**
   * Re-bases a waiter's deadline on now: a coalesced decision's call is written at the end of the
   * event-loop turn, and the deadline measures the store from that write. (Now + timeout is the
   * latest deadline there is, so the set stays in deadline order.)
   */
  rebase(waiter: Waiter): void {
    if (waiter.done) return;
    this.waiters.delete(waiter);
    waiter.deadlineMs = performance.now() + this.timeoutMs;
    this.waiters.add(waiter);
  }

  private arm(inMs: number): void {
    this.timer = setTimeout(this.onDeadline, Math.max(1, Math.ceil(inMs)));
    this.timer.unref?.();
  }

  /**
   * Expires the calls whose deadline passed — one check later. A timer that fires after this
   * process's own event loop stalled runs before the loop reads the sockets, so a reply that
   * arrived in time would lose to it and an idle Redis would be taken for a failed one (issue 13:
   * 20–87 ms stalls on a loaded host, a 50 ms timeout). Expiring from `setImmediate` lets the poll
   * phase deliver every reply already received first: a call times out only when Redis has not
   * answered within `timeoutMs` of the write.
   */
  private readonly onDeadline = (): void => {
    this.timer = undefined;
    const nowMs = performance.now();
    const due: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (waiter.deadlineMs > nowMs) {
        this.arm(waiter.deadlineMs - nowMs);
        break;
      }
      this.waiters.delete(waiter);
      due.push(waiter);
    }
    if (due.length === 0) return;
    setImmediate(() => {
      for (const waiter of due) {
        if (waiter.done) continue; // answered during the poll phase
        waiter.done = true;
        try {
          waiter.expire();
        } catch {
          // expire() only resolves or rejects a promise; nothing may escape a timer callback.
        }
      }
    });
  };
}
