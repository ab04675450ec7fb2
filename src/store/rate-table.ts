/**
 * @module rate-table
 * The timestamps of one rate policy in `MemoryStore`, their incremental sweep, and the memory bound
 * (sampled eviction into overflow buckets).
 */

import type { RateExtra } from '../core/decision-state.js';

/** Entries sampled for a victim when a new key meets a full table. */
const EVICTION_SAMPLE = 16;

/** Seeded 32-bit string hash (FNV-1a, then a murmur3 finaliser), for overflow buckets. */
function hashKey(key: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The timestamps of one rate policy: key → slot in a growable `Float64Array`, so a kept key costs a
 * Map entry and 8 bytes (no boxed number per update), and a decision's read-then-write of the same
 * key costs one hash lookup (the last slot is remembered). Past `maxKeys`, evicted timestamps are
 * max-merged into `overflow` buckets chosen by a seeded hash of the key (seeded per table, so a
 * caller cannot aim at another's bucket).
 */
export class RateTable {
  readonly extra = new Map<string, RateExtra>();
  /** Max-merged timestamps of evicted keys (and of shared decisions), µs; by hashed key. */
  overflow: Float64Array | undefined;
  /** The latest timestamp in `overflow`, µs: at or after it every bucket is full. */
  overflowUntilUs = Number.NEGATIVE_INFINITY;
  /** The bucket of the decision under way that uses {@link OVERFLOW_KEY}. */
  overflowSlot = 0;
  /** Keys with state evicted so far. */
  evicted = 0;
  private readonly seed = (Math.random() * 0x1_0000_0000) >>> 0;
  private readonly slots = new Map<string, number>();
  private tats = new Float64Array(1024);
  private readonly free: number[] = [];
  private highWater = 0;
  private lastKey: string | undefined;
  private lastSlot = -1;
  private cursor: Iterator<[string, number]> | undefined;

  constructor(private readonly overflowBuckets: number) {}

  get size(): number {
    return this.slots.size;
  }

  has(key: string): boolean {
    return this.slots.has(key);
  }

  get(key: string): number | undefined {
    const slot = this.slots.get(key);
    this.lastKey = key;
    this.lastSlot = slot ?? -1;
    return slot === undefined ? undefined : this.tats[slot];
  }

  set(key: string, tatUs: number): void {
    let slot = key === this.lastKey ? this.lastSlot : (this.slots.get(key) ?? -1);
    if (slot < 0) {
      slot = this.free.pop() ?? this.highWater++;
      if (slot >= this.tats.length) {
        const grown = new Float64Array(this.tats.length * 2);
        grown.set(this.tats);
        this.tats = grown;
      }
      this.slots.set(key, slot);
    }
    this.tats[slot] = tatUs;
    this.lastKey = key;
    this.lastSlot = slot;
  }

  delete(key: string): void {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.slots.delete(key);
    this.free.push(slot);
    if (key === this.lastKey) this.lastKey = undefined;
  }

  /** The overflow bucket of a key. */
  bucketOf(key: string): number {
    return hashKey(key, this.seed) & (this.overflowBuckets - 1);
  }

  /** Max-merges a timestamp into a bucket. */
  mergeOverflow(bucket: number, tatUs: number): void {
    if (this.overflow === undefined) this.overflow = new Float64Array(this.overflowBuckets);
    if (tatUs > (this.overflow[bucket] as number)) this.overflow[bucket] = tatUs;
    if (tatUs > this.overflowUntilUs) this.overflowUntilUs = tatUs;
  }

  /** A new key's starting state: its bucket's timestamp when that is still in the future. */
  inherit(key: string, nowUs: number): void {
    if (this.overflow === undefined || nowUs >= this.overflowUntilUs) return;
    const tatUs = this.overflow[this.bucketOf(key)] as number;
    if (tatUs > nowUs) this.set(key, tatUs);
  }

  /**
   * Makes room for one key: drops the first full, hold-free key among the next
   * {@link EVICTION_SAMPLE} entries, else evicts the first hold-free one that spent at most one
   * emission interval (`emissionUs`), else the hold-free one with the earliest timestamp; an
   * evicted key's timestamp is merged into its bucket. False when every sampled key has holds.
   */
  evictOne(nowUs: number, emissionUs: number): boolean {
    let victim: string | undefined;
    let victimTatUs = Number.POSITIVE_INFINITY;
    for (let i = 0; i < EVICTION_SAMPLE; i++) {
      if (this.cursor === undefined) this.cursor = this.slots.entries();
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = undefined;
        continue;
      }
      const [key, slot] = next.value;
      if (this.extra.has(key)) continue;
      const tatUs = this.tats[slot] as number;
      if (tatUs <= nowUs) {
        this.delete(key);
        return true;
      }
      if (tatUs < victimTatUs) {
        victim = key;
        victimTatUs = tatUs;
        if (tatUs - nowUs <= emissionUs) break; // holds at most one request: good enough
      }
    }
    if (victim === undefined) return false;
    this.mergeOverflow(this.bucketOf(victim), victimTatUs);
    this.delete(victim);
    this.evicted++;
    return true;
  }

  /** Drops up to `budget` examined keys that are the same as no key. Returns how many it freed. */
  sweep(nowUs: number, budget: number): number {
    let freed = 0;
    for (let i = 0; i < budget; i++) {
      if (this.cursor === undefined) this.cursor = this.slots.entries();
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = undefined;
        if (this.slots.size <= i) break;
        continue;
      }
      const [key, slot] = next.value;
      if ((this.tats[slot] ?? 0) <= nowUs && !this.extra.has(key)) {
        this.delete(key);
        freed++;
      }
    }
    return freed;
  }
}
