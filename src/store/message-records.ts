/**
 * @module message-records
 * The in-memory dedup table behind `MemoryStore.rememberMessage`: (caller, messageId) → task, with
 * a TTL, bounded.
 */

import { pairKey } from '../core/table-key.js';
import { boundedKey } from './bounded-key.js';
import { positiveOption } from './positive-option.js';

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
  | {
      readonly fresh: false;
      readonly taskId?: string;
      /**
       * A shared store's pending record whose owner stopped renewing it (the admitting process
       * died, or lost the store): no task id was recorded. The message may have started; look for
       * its task in the shared task store, and take the record over (`takeOver`) if there is none.
       */
      readonly orphaned?: true;
      /** The store could not be asked (outage, timeout): whether this is a copy is unknown. */
      readonly unavailable?: true;
    };

/**
 * Pending-record options of `Store.rememberMessage` for stores shared by several processes: the
 * record of a message being admitted is owned by the process that admitted it and stays pending
 * only `pendingTtlMs` unless the owner renews it (`Store.renewPendingMessages`), like a lease.
 */
export interface PendingMessageOptions {
  /** The admitting process (no spaces); only it renews or forgets the pending record. */
  readonly owner: string;
  /** How long the record stays pending without a renewal, ms. */
  readonly pendingTtlMs: number;
  /** Take over an orphaned record (it becomes this owner's, and the answer is fresh). */
  readonly takeOver?: boolean;
}

/** Slots examined per call by the incremental sweep (from the oldest record). */
const SWEEP_BATCH = 4;
/** Ring slots allocated at first; the ring doubles up to the cap. */
const INITIAL_SLOTS = 1024;

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
  positiveOption('message record ttlMs', ttlMs, 0);
}

/**
 * The table key of a (caller, messageId): the pair joined injectively (`pairKey`, length-prefixed),
 * each part bounded and well-formed first (`boundedKey`: a part longer than 256 characters, or
 * with a lone surrogate, is its hash). `RedisStore` keys its records by the same string, so a
 * NUL, `/` or `:` in either part aliases no other pair in either store. Callers that touch the
 * same record several times per request compute it once and use the `…Key` methods.
 *
 * @example
 * ```ts
 * records.rememberKey(messageRecordKey('a', 'm1'), 60_000, now);
 * ```
 */
export function messageRecordKey(caller: string, messageId: string): string {
  return pairKey(boundedKey(caller), boundedKey(messageId));
}

/**
 * A bounded map of message records, keyed by {@link messageRecordKey}. Records sit in a ring in
 * insertion order (a `Map` from key to slot, the expiry in a `Float64Array`): no object per
 * record. Records of one limiter share a TTL, so the oldest are mostly the first to expire: the
 * per-call sweep only looks at the head of the ring, and a rebuild (amortised O(1)) drops the
 * forgotten and expired records it left behind a live head. A live record is dropped only when
 * `maxEntries` live records are kept; the oldest goes first and is counted in
 * {@link MessageRecords.evicted}.
 *
 * @example
 * ```ts
 * const records = new MessageRecords(100_000);
 * records.remember('a', 'm1', 60_000, now); // { fresh: true }
 * records.remember('a', 'm1', 60_000, now); // { fresh: false }
 * ```
 */
export class MessageRecords {
  /** Key → ring slot. */
  private readonly slots = new Map<string, number>();
  private readonly maxEntries: number;
  /**
   * Ring size limit: a third more slots than records, so that a full ring at the cap is at least
   * a quarter forgotten or expired and a rebuild makes room for many records at once.
   */
  private readonly maxSlots: number;
  private appendsSinceRebuild = 0;
  /** Ring: key of each slot (undefined once forgotten), its task id and expiry (ms). */
  private keys: (string | undefined)[];
  private taskIds: (string | undefined)[];
  private expiresMs: Float64Array;
  /** Oldest occupied slot, and slots in use from it (forgotten ones included). */
  private head = 0;
  private used = 0;
  private evictions = 0;
  /**
   * The key of the last {@link MessageRecords.peekKey} and the slot it found (-1: none), so that
   * `rememberKey` of the same key right after (check, decide, record) looks it up once. Cleared by
   * every write that moves or frees a slot.
   */
  private peekedKey: string | undefined;
  private peekedSlot = -1;

  /** @param maxEntries Records kept at most; past it the oldest goes first. */
  constructor(maxEntries: number) {
    this.maxEntries = positiveOption('MessageRecords: maxEntries', maxEntries, 0, {
      integer: true,
    });
    this.maxSlots = Math.max(maxEntries + 1, Math.ceil((maxEntries * 4) / 3));
    const slots = Math.min(this.maxSlots, INITIAL_SLOTS);
    this.keys = new Array<string | undefined>(slots).fill(undefined);
    this.taskIds = new Array<string | undefined>(slots).fill(undefined);
    this.expiresMs = new Float64Array(slots);
  }

  /** Records kept now (expired ones included until swept). */
  get size(): number {
    return this.slots.size;
  }

  /** Live (unexpired) records dropped to stay under the cap since creation. */
  get evicted(): number {
    return this.evictions;
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
    const slot =
      key === this.peekedKey
        ? this.peekedSlot < 0
          ? undefined
          : this.peekedSlot
        : this.slots.get(key);
    if (slot !== undefined && (this.expiresMs[slot] as number) > nowMs) {
      const taskId = this.taskIds[slot];
      return taskId === undefined ? SEEN : { fresh: false, taskId };
    }
    if (slot !== undefined) {
      // Expired but not swept yet: a fresh record in its place.
      this.expiresMs[slot] = nowMs + ttlMs;
      this.taskIds[slot] = undefined;
    } else {
      this.sweep(nowMs);
      this.append(key, undefined, nowMs + ttlMs, nowMs);
    }
    return FRESH;
  }

  /**
   * The live record of `key`, or undefined when there is none (nothing is written).
   *
   * @example
   * ```ts
   * records.peekKey(messageRecordKey('a', 'm1'), clock.nowMs()); // undefined, or { fresh: false, … }
   * ```
   */
  peekKey(key: string, nowMs: number): Exclude<MessageRecord, { fresh: true }> | undefined {
    const slot = this.slots.get(key);
    this.peekedKey = key;
    this.peekedSlot = slot ?? -1;
    if (slot === undefined || (this.expiresMs[slot] as number) <= nowMs) return undefined;
    const taskId = this.taskIds[slot];
    return taskId === undefined ? (SEEN as { fresh: false }) : { fresh: false, taskId };
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
    this.put(key, taskId, nowMs + ttlMs, nowMs);
  }

  /**
   * Drops the record of `key`, if any: the next copy is fresh.
   *
   * @example
   * ```ts
   * records.forgetKey(messageRecordKey('a', 'm1'));
   * ```
   */
  forgetKey(key: string): void {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.peekedKey = undefined;
    this.slots.delete(key);
    this.keys[slot] = undefined;
    this.taskIds[slot] = undefined;
  }

  /** Sets the record of `key`: in place when it has a slot (keeping its place), else at the tail. */
  private put(key: string, taskId: string | undefined, expiresMs: number, nowMs: number): void {
    this.sweep(nowMs);
    const current = this.slots.get(key);
    if (current !== undefined) {
      this.expiresMs[current] = expiresMs;
      this.taskIds[current] = taskId;
      return;
    }
    this.append(key, taskId, expiresMs, nowMs);
  }

  /** Adds a record for `key`, which has no slot, at the tail (making room at the cap). */
  private append(key: string, taskId: string | undefined, expiresMs: number, nowMs: number): void {
    if (this.used === this.keys.length) {
      // Full ring. Forgotten and expired records behind a live head are not swept: rebuild
      // without them (doubling the ring while it is under its size), then make room.
      const length = this.keys.length;
      this.rebuild(length < this.maxSlots ? Math.min(this.maxSlots, length * 2) : length, nowMs);
      this.evictToCap(nowMs);
    } else if (this.slots.size >= this.maxEntries) {
      // At the cap, counting records that may have expired behind the head: find those at most
      // once per quarter of the cap of new records (amortised O(1)), then evict the oldest.
      if (this.appendsSinceRebuild * 4 >= this.maxEntries) {
        // A rebuild re-indexes every record: only when a scan finds an expired one to drop.
        if (this.hasExpired(nowMs)) this.rebuild(this.keys.length, nowMs);
        else this.appendsSinceRebuild = 0;
      }
      this.evictToCap(nowMs);
    }
    this.appendsSinceRebuild++;
    this.peekedKey = undefined;
    const slot = (this.head + this.used) % this.keys.length;
    this.keys[slot] = key;
    this.taskIds[slot] = taskId;
    this.expiresMs[slot] = expiresMs;
    this.slots.set(key, slot);
    this.used++;
  }

  /** Frees the head slot; a live record there is counted as evicted. */
  private dropOldest(nowMs: number): void {
    this.peekedKey = undefined;
    const key = this.keys[this.head];
    if (key !== undefined) {
      if ((this.expiresMs[this.head] as number) > nowMs) this.evictions++;
      this.slots.delete(key);
      this.keys[this.head] = undefined;
      this.taskIds[this.head] = undefined;
    }
    this.head = (this.head + 1) % this.keys.length;
    this.used--;
  }

  /**
   * Copies the ring into `size` slots, oldest first from slot 0, leaving out forgotten and expired
   * records.
   */
  private rebuild(size: number, nowMs: number): void {
    this.peekedKey = undefined;
    const length = this.keys.length;
    const keys = new Array<string | undefined>(size).fill(undefined);
    const taskIds = new Array<string | undefined>(size).fill(undefined);
    const expiresMs = new Float64Array(size);
    let used = 0;
    for (let i = 0; i < this.used; i++) {
      const from = (this.head + i) % length;
      const key = this.keys[from];
      if (key === undefined) continue;
      if ((this.expiresMs[from] as number) <= nowMs) {
        this.slots.delete(key);
        continue;
      }
      keys[used] = key;
      taskIds[used] = this.taskIds[from];
      expiresMs[used] = this.expiresMs[from] as number;
      this.slots.set(key, used);
      used++;
    }
    this.keys = keys;
    this.taskIds = taskIds;
    this.expiresMs = expiresMs;
    this.head = 0;
    this.used = used;
    this.appendsSinceRebuild = 0;
  }

  /** Whether a live-keyed record in the ring has expired (a read-only scan, no hashing). */
  private hasExpired(nowMs: number): boolean {
    const length = this.keys.length;
    for (let i = 0; i < this.used; i++) {
      const slot = (this.head + i) % length;
      if (this.keys[slot] !== undefined && (this.expiresMs[slot] as number) <= nowMs) return true;
    }
    return false;
  }

  /** Drops the oldest records until there is room for one more under the cap. */
  private evictToCap(nowMs: number): void {
    while (this.slots.size >= this.maxEntries && this.used > 0) this.dropOldest(nowMs);
  }

  /** Drops forgotten and expired records from the head, a few per call. */
  private sweep(nowMs: number): void {
    for (let i = 0; i < SWEEP_BATCH && this.used > 0; i++) {
      const head = this.head;
      if (this.keys[head] !== undefined && (this.expiresMs[head] as number) > nowMs) return;
      this.dropOldest(nowMs);
    }
  }
}
