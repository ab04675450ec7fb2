/**
 * @module message-records
 * The in-memory deduplication table behind `MemoryStore.rememberMessage` (DESIGN §4
 * "Deduplication"): (caller, messageId) → the task an admitted message started, with a TTL.
 * Bounded: expired entries are dropped by a small incremental sweep on every call (no timer per
 * key), and at the cap the oldest entry goes first.
 */

/**
 * What a store knows about a (caller, messageId): `fresh` when it had not seen it (it now has),
 * otherwise the task the first copy started, once recorded.
 *
 * @example
 * ```ts
 * const seen: MessageRecord = await store.rememberMessage('orchestrator-7', 'm-1', 600_000);
 * if (!seen.fresh && seen.taskId !== undefined) return existingTask(seen.taskId);
 * ```
 */
export type MessageRecord =
  | { readonly fresh: true }
  | { readonly fresh: false; readonly taskId?: string };

interface Entry {
  /** Its key in the table (so that the sweep can walk values without allocating pairs). */
  readonly key: string;
  expiresMs: number;
  taskId: string | undefined;
}

/** Entries examined per call by the incremental sweep. */
const SWEEP_BATCH = 8;
/** Entries examined before a live record is evicted for room. */
const PRESSURE_SWEEP = 256;

const FRESH: MessageRecord = Object.freeze({ fresh: true });
const SEEN: MessageRecord = Object.freeze({ fresh: false });

/**
 * Checks a TTL argument: a positive, finite number of milliseconds.
 *
 * @example
 * ```ts
 * checkMessageTtlMs(600_000); // ok; 0, NaN, Infinity throw RangeError
 * ```
 */
export function checkMessageTtlMs(ttlMs: number): void {
  if (!(ttlMs > 0 && Number.isFinite(ttlMs))) {
    throw new RangeError(`message record ttlMs must be a positive number, got ${ttlMs}`);
  }
}

/**
 * The table key of a (caller, messageId): `caller \0 messageId`. Callers that touch the same
 * record several times per request compute it once and use the `…Key` methods.
 *
 * @example
 * ```ts
 * records.rememberKey(messageRecordKey('a', 'm1'), 60_000, now);
 * ```
 */
export function messageRecordKey(caller: string, messageId: string): string {
  return `${caller}\u0000${messageId}`;
}

/**
 * A bounded map of message records, keyed by `caller \0 messageId`.
 *
 * @example
 * ```ts
 * const records = new MessageRecords(100_000);
 * records.remember('a', 'm1', 60_000, now); // { fresh: true }
 * records.remember('a', 'm1', 60_000, now); // { fresh: false }
 * ```
 */
export class MessageRecords {
  private readonly entries = new Map<string, Entry>();
  private readonly maxEntries: number;
  /** Incremental sweep position (insertion order). */
  private cursor: Iterator<Entry> | undefined;
  /**
   * Eviction position: the oldest entry not yet evicted. Kept across calls, so that deleted
   * slots at the front of the table are skipped once, not on every eviction.
   */
  private oldest: Iterator<string> | undefined;
  private evictions = 0;

  /** @param maxEntries Records kept at most; past it the oldest goes first. */
  constructor(maxEntries: number) {
    this.maxEntries = maxEntries;
  }

  /** Records kept now (expired ones included until swept). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Set-if-absent: fresh when there was no live record (one now exists until `nowMs + ttlMs`).
   *
   * @example
   * ```ts
   * records.remember('a', 'm1', 60_000, clock.nowMs());
   * ```
   */
  remember(caller: string, messageId: string, ttlMs: number, nowMs: number): MessageRecord {
    return this.rememberKey(messageRecordKey(caller, messageId), ttlMs, nowMs);
  }

  /**
   * {@link MessageRecords.remember} by a key from {@link messageRecordKey}.
   *
   * @example
   * ```ts
   * records.rememberKey(messageRecordKey('a', 'm1'), 60_000, clock.nowMs());
   * ```
   */
  rememberKey(key: string, ttlMs: number, nowMs: number): MessageRecord {
    checkMessageTtlMs(ttlMs);
    this.sweep(nowMs);
    const entry = this.entries.get(key);
    if (entry !== undefined && entry.expiresMs > nowMs) {
      return entry.taskId === undefined ? SEEN : { fresh: false, taskId: entry.taskId };
    }
    this.put(key, entry, nowMs + ttlMs, undefined, nowMs);
    return FRESH;
  }

  /**
   * Attaches the task a message started; the record lives until `nowMs + ttlMs`.
   *
   * @example
   * ```ts
   * records.record('a', 'm1', 'task-9', 600_000, clock.nowMs());
   * ```
   */
  record(caller: string, messageId: string, taskId: string, ttlMs: number, nowMs: number): void {
    this.recordKey(messageRecordKey(caller, messageId), taskId, ttlMs, nowMs);
  }

  /**
   * {@link MessageRecords.record} by a key from {@link messageRecordKey}.
   *
   * @example
   * ```ts
   * records.recordKey(messageRecordKey('a', 'm1'), 'task-9', 600_000, clock.nowMs());
   * ```
   */
  recordKey(key: string, taskId: string, ttlMs: number, nowMs: number): void {
    checkMessageTtlMs(ttlMs);
    this.sweep(nowMs);
    this.put(key, this.entries.get(key), nowMs + ttlMs, taskId, nowMs);
  }

  /** Live records dropped to stay under the cap since creation. */
  get evicted(): number {
    return this.evictions;
  }

  /**
   * Sets the record of `key` (`current`: its entry, just read from the table, if it has one;
   * updated in place, which keeps its position in insertion order, as `Map.set` would).
   */
  private put(
    key: string,
    current: Entry | undefined,
    expiresMs: number,
    taskId: string | undefined,
    nowMs: number,
  ): void {
    if (current !== undefined) {
      current.expiresMs = expiresMs;
      current.taskId = taskId;
      return;
    }
    if (this.entries.size >= this.maxEntries) {
      // Expired records go first; only then the oldest live one (counted: a copy may run twice).
      this.sweep(nowMs, PRESSURE_SWEEP);
      if (this.entries.size >= this.maxEntries) this.evictOldest();
    }
    this.entries.set(key, { key, expiresMs, taskId });
  }

  private evictOldest(): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      if (this.oldest === undefined) this.oldest = this.entries.keys();
      const next = this.oldest.next();
      if (next.done) {
        this.oldest = undefined;
        continue;
      }
      this.entries.delete(next.value);
      this.evictions++;
      return;
    }
  }

  private sweep(nowMs: number, budget = SWEEP_BATCH): void {
    for (let i = 0; i < budget; i++) {
      if (this.cursor === undefined) {
        if (this.entries.size === 0) return;
        this.cursor = this.entries.values();
      }
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = undefined;
        continue;
      }
      const entry = next.value;
      if (entry.expiresMs <= nowMs) this.entries.delete(entry.key);
    }
  }
}
