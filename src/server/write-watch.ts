/**
 * @module write-watch
 * The adapters' response write deadline: responses whose pending write stalls are ended, freeing
 * their leases. One unref'd timer per adapter.
 */

/** Default response write deadline, ms. */
export const DEFAULT_WRITE_DEADLINE_MS = 30_000;

/** Checks per deadline: a write is ended once this many checks in a row saw it pending, unchanged. */
const CHECKS_PER_DEADLINE = 4;

/** One response as the watch sees it. */
export interface WatchedWrite {
  /** Whether bytes are waiting to be written (a write not yet completed). */
  pending(): boolean;
  /** A number that changes whenever the response makes progress (bytes out, a write started). */
  progress(): number;
  /** Ends the response: its pending write did not complete within the deadline. */
  expire(): void;
}

interface Entry {
  readonly write: WatchedWrite;
  last: number;
  stalled: number;
}

/**
 * Validates a write deadline option: a positive number of ms, or `Infinity` for none.
 *
 * @example
 * ```ts
 * writeDeadlineOf(undefined); // 30_000
 * ```
 */
export function writeDeadlineOf(value: number | undefined): number {
  if (value === undefined) return DEFAULT_WRITE_DEADLINE_MS;
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw new RangeError(
      `a2a-ratelimit: writeDeadlineMs must be a positive number of ms (or Infinity), got ${String(value)}`,
    );
  }
  return value;
}

/**
 * Watches responses for writes that do not complete within `deadlineMs`: a response seen pending
 * with no progress at {@link CHECKS_PER_DEADLINE} checks in a row (a quarter of the deadline
 * apart) is expired: a stuck write ends between ¾ of the deadline and the deadline.
 *
 * @example
 * ```ts
 * const watch = new WriteWatch(30_000);
 * const stop = watch.add({ pending: () => res.writableLength > 0, progress: () => res.socket?.bytesWritten ?? 0, expire: () => res.destroy() });
 * res.on('close', stop);
 * ```
 */
export class WriteWatch {
  private readonly entries = new Set<Entry>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly everyMs: number;

  constructor(readonly deadlineMs: number) {
    this.everyMs = Math.max(5, Math.floor(deadlineMs / CHECKS_PER_DEADLINE));
  }

  /** Watches `write` until the returned function is called (or it expires). */
  add(write: WatchedWrite): () => void {
    if (!Number.isFinite(this.deadlineMs)) return noop;
    const entry: Entry = { write, last: Number.NaN, stalled: 0 };
    this.entries.add(entry);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.check(), this.everyMs);
      this.timer.unref();
    }
    return () => this.remove(entry);
  }

  /** Responses watched now. */
  size(): number {
    return this.entries.size;
  }

  private remove(entry: Entry): void {
    this.entries.delete(entry);
    if (this.entries.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private check(): void {
    for (const entry of this.entries) {
      const write = entry.write;
      if (!write.pending()) {
        entry.stalled = 0;
        entry.last = Number.NaN;
        continue;
      }
      const mark = write.progress();
      if (mark !== entry.last) {
        entry.last = mark;
        entry.stalled = 0;
        continue;
      }
      entry.stalled += 1;
      if (entry.stalled >= CHECKS_PER_DEADLINE - 1) {
        this.remove(entry);
        write.expire();
      }
    }
  }
}

function noop(): void {}
