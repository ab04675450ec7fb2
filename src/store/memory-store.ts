/**
 * @module memory-store
 * `MemoryStore`: the embedded, single-process store with a synchronous decision path. Owns the
 * tables behind the pure decision and their memory bound: full, hold-free keys are dropped by an
 * incremental sweep (no timer per key); at `maxKeys` a new key takes the place of a sampled key
 * that holds little (a full one, else one that spent at most one request, else the earliest
 * timestamp), whose timestamp is kept, max-merged, in one of a fixed number of hashed overflow
 * buckets; a key entering the table starts from its bucket. So a store under a flood of new callers forgets who spent what, never that it was spent:
 * no caller gets a fresh bucket by being evicted, and a new caller is refused only when its bucket
 * holds a limited caller's timestamp. Caller, tenant, skill and messageId values are bounded in
 * length first (bounded-key.ts).
 */

import type { Clock } from '../core/clock.js';
import {
  chargeUsage,
  type DecisionInput,
  decide,
  type LeasePolicy,
  type LeaseSet,
  OVERFLOW_KEY,
  policiesOf,
  pruneLeases,
  type RateExtra,
  releaseLease,
  renewLease,
} from '../core/decide.js';
import {
  type CompiledPolicySet,
  type CompiledRatePolicy,
  compilePolicies,
  type HoldOptions,
  type Policy,
} from '../core/policy.js';
import type { Decision, LeaseRef } from '../core/rejection.js';
import { boundedInput } from './bounded-key.js';
import { type MessageRecord, MessageRecords, messageRecordKey } from './message-records.js';
import type { Store } from './store.js';

/**
 * Options of {@link MemoryStore}.
 *
 * @example
 * ```ts
 * const options: MemoryStoreOptions = { policies: [{ name: 'r', kind: 'rate', limit: 60, windowSeconds: 60 }], maxKeys: 50_000 };
 * ```
 */
export interface MemoryStoreOptions {
  /** Policies, raw (validated here) or already compiled. */
  readonly policies: readonly Policy[] | CompiledPolicySet;
  /** Hold options when `policies` is raw. */
  readonly holds?: HoldOptions;
  /** Time source; default `Date.now`. */
  readonly clock?: Clock;
  /** Keys kept per rate policy; past it new keys evict sampled ones (see the module); default 100,000. */
  readonly maxKeys?: number;
  /**
   * Hashed overflow buckets per rate policy (8 bytes each, allocated at the first eviction): the
   * more, the fewer new callers share one with an evicted limited caller. Rounded up to a power of
   * two; default the power of two ≥ 2 × `maxKeys` (262,144 = 2 MiB for 100,000 keys).
   */
  readonly overflowBuckets?: number;
}

/**
 * Counts for tests and metrics.
 *
 * @example
 * ```ts
 * store.stats().rateKeys; // keys currently kept across rate policies
 * ```
 */
export interface MemoryStoreStats {
  /** Rate keys kept, over all rate policies. */
  readonly rateKeys: number;
  /** Live holds, over all rate keys. */
  readonly holds: number;
  /** Live leases, over all concurrency and overload policies. */
  readonly leases: number;
  /** Decisions made on a shared overflow bucket (no key could be evicted) since creation. */
  readonly overflowDecisions: number;
  /** Keys with state evicted to make room for new ones (their timestamps kept in overflow buckets). */
  readonly rateKeysEvicted: number;
  /** Deduplication records kept (expired ones until swept). */
  readonly messageRecords: number;
  /** Live deduplication records dropped to stay under `maxKeys` (each could let a copy run twice). */
  readonly messageRecordsEvicted: number;
}

/** Entries examined per sweep step, and decisions between background steps. */
const SWEEP_BATCH = 64;
const SWEEP_EVERY = 64;
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
class RateTable {
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

const systemClock: Clock = { nowMs: () => Date.now() };

/**
 * The in-memory store: decisions are synchronous (`decideSync`) and atomic by construction.
 * Use one per process; several replicas share limits through `RedisStore` instead.
 *
 * @example
 * ```ts
 * const store = new MemoryStore({
 *   policies: [{ name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage'], limit: 60, windowSeconds: 60, burst: 10 }],
 * });
 * const d = store.decideSync({ caller: 'orchestrator-7', method: 'SendMessage', messageId: 'm-1' });
 * ```
 */
export class MemoryStore implements Store {
  readonly policySet: CompiledPolicySet;
  private readonly clock: Clock;
  private readonly maxKeys: number;
  /** Deduplication records, bounded by `maxKeys`. */
  private readonly messages: MessageRecords;
  private readonly rates: RateTable[] = [];
  private readonly leaseTables: Map<string, LeaseSet>[] = [];
  private ops = 0;
  private leaseCounter = 0;
  private overflowDecisions = 0;
  private leaseCursor: { index: number; it: Iterator<[string, LeaseSet]> } | undefined;

  constructor(options: MemoryStoreOptions) {
    this.policySet = Array.isArray(options.policies)
      ? compilePolicies(options.policies as readonly Policy[], options.holds)
      : (options.policies as CompiledPolicySet);
    this.clock = options.clock ?? systemClock;
    const maxKeys = options.maxKeys ?? 100_000;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new RangeError(`MemoryStore: maxKeys must be a positive integer, got ${maxKeys}`);
    }
    this.maxKeys = maxKeys;
    const buckets = options.overflowBuckets ?? 2 * maxKeys;
    if (!Number.isSafeInteger(buckets) || buckets < 1 || buckets > 2 ** 30) {
      throw new RangeError(
        `MemoryStore: overflowBuckets must be an integer from 1 to 2^30, got ${buckets}`,
      );
    }
    const overflowBuckets = 2 ** Math.ceil(Math.log2(buckets));
    this.messages = new MessageRecords(maxKeys);
    for (const p of this.policySet.policies) {
      this.rates[p.index] = new RateTable(overflowBuckets);
      this.leaseTables[p.index] = new Map();
    }
  }

  /**
   * Decides one request now, synchronously.
   *
   * @example
   * ```ts
   * const d = store.decideSync({ caller: 'a', method: 'GetTask' });
   * ```
   */
  decideSync(input: DecisionInput): Decision {
    const nowMs = this.clock.nowMs();
    if ((++this.ops & (SWEEP_EVERY - 1)) === 0) this.sweep(nowMs);
    return decide(this.policySet, boundedInput(input), nowMs, this);
  }

  /** Charges reported usage, as {@link Store.chargeUsage}, synchronously. */
  chargeUsageSync(request: DecisionInput, units: number): void {
    const nowMs = this.clock.nowMs();
    for (const p of policiesOf(this.policySet, request)) {
      if (p.kind !== 'rate' || p.unit === undefined) continue;
      const key = p.keyOf(request);
      if (key !== undefined) chargeUsage(p, key, units, nowMs, this);
    }
  }

  /** {@inheritDoc Store.chargeUsage} */
  chargeUsage(request: DecisionInput, units: number): Promise<void> {
    this.chargeUsageSync(request, units);
    return Promise.resolve();
  }

  /** {@inheritDoc Store.decide} */
  decide(input: DecisionInput): Promise<Decision> {
    try {
      return Promise.resolve(this.decideSync(input));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Ends leases now, synchronously; unknown leases are ignored.
   *
   * @example
   * ```ts
   * store.releaseSync(admission.leases);
   * ```
   */
  releaseSync(leases: readonly LeaseRef[]): void {
    const nowMs = this.clock.nowMs();
    for (const lease of leases) {
      const p = this.leasePolicy(lease.policyIndex);
      if (p !== undefined) releaseLease(p, lease.key, lease.leaseId, nowMs, this);
    }
  }

  /** {@inheritDoc Store.release} */
  release(leases: readonly LeaseRef[]): Promise<void> {
    this.releaseSync(leases);
    return Promise.resolve();
  }

  /**
   * Extends leases by their TTL now, synchronously.
   *
   * @example
   * ```ts
   * store.renewSync(admission.leases); // [true]
   * ```
   */
  renewSync(leases: readonly LeaseRef[]): boolean[] {
    const nowMs = this.clock.nowMs();
    return leases.map((lease) => {
      const p = this.leasePolicy(lease.policyIndex);
      return p !== undefined && renewLease(p, lease.key, lease.leaseId, nowMs, this);
    });
  }

  /** {@inheritDoc Store.renew} */
  renew(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return Promise.resolve(this.renewSync(leases));
  }

  /**
   * Records a message, as {@link Store.rememberMessage}, synchronously.
   *
   * @example
   * ```ts
   * store.rememberMessageSync('orchestrator-7', 'm-1', 900_000); // { fresh: true } the first time
   * ```
   */
  rememberMessageSync(caller: string, messageId: string, ttlMs: number): MessageRecord {
    return this.messages.rememberKey(
      messageRecordKey(caller, messageId),
      ttlMs,
      this.clock.nowMs(),
    );
  }

  /**
   * {@link MemoryStore.rememberMessageSync} by the record key `messageRecordKey(caller, messageId)`
   * (for callers that already built it).
   *
   * @example
   * ```ts
   * store.rememberMessageKeySync(messageRecordKey('orchestrator-7', 'm-1'), 900_000);
   * ```
   */
  rememberMessageKeySync(key: string, ttlMs: number): MessageRecord {
    return this.messages.rememberKey(key, ttlMs, this.clock.nowMs());
  }

  /**
   * The live record of a message key, without writing one (undefined when there is none). With
   * {@link MemoryStore.rememberMessageKeySync} after a decision, a limiter records only the
   * messages it admitted: a flood of rejected copies never takes room in the table.
   *
   * @example
   * ```ts
   * store.peekMessageKeySync(messageRecordKey('orchestrator-7', 'm-1')); // undefined, or { fresh: false, taskId? }
   * ```
   */
  peekMessageKeySync(key: string): Exclude<MessageRecord, { fresh: true }> | undefined {
    return this.messages.peekKey(key, this.clock.nowMs());
  }

  /**
   * Drops the record of a message key (nothing ran for it: the next copy is fresh).
   *
   * @example
   * ```ts
   * store.forgetMessageKeySync(messageRecordKey('orchestrator-7', 'm-1'));
   * ```
   */
  forgetMessageKeySync(key: string): void {
    this.messages.forgetKey(key);
  }

  /**
   * Records a message's task, as {@link Store.recordMessageTask}, synchronously, by the record key
   * `messageRecordKey(caller, messageId)`. Throws a `RangeError` for a bad `ttlMs`.
   *
   * @example
   * ```ts
   * store.recordMessageTaskKeySync(messageRecordKey('orchestrator-7', 'm-1'), 'task-9', 900_000);
   * ```
   */
  recordMessageTaskKeySync(key: string, taskId: string, ttlMs: number): void {
    this.messages.recordKey(key, taskId, ttlMs, this.clock.nowMs());
  }

  /** {@inheritDoc Store.rememberMessage} */
  rememberMessage(caller: string, messageId: string, ttlMs: number): Promise<MessageRecord> {
    try {
      return Promise.resolve(this.rememberMessageSync(caller, messageId, ttlMs));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** {@inheritDoc Store.recordMessageTask} */
  recordMessageTask(
    caller: string,
    messageId: string,
    taskId: string,
    ttlMs: number,
  ): Promise<void> {
    try {
      this.messages.recordKey(
        messageRecordKey(caller, messageId),
        taskId,
        ttlMs,
        this.clock.nowMs(),
      );
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Nothing to free; present for the {@link Store} contract. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Current table sizes.
   *
   * @example
   * ```ts
   * store.stats(); // { rateKeys: 3, holds: 1, leases: 0, overflowDecisions: 0, rateKeysEvicted: 0, messageRecords: 2, messageRecordsEvicted: 0 }
   * ```
   */
  stats(): MemoryStoreStats {
    let rateKeys = 0;
    let rateKeysEvicted = 0;
    let holds = 0;
    let leases = 0;
    for (const t of this.rates) {
      if (t === undefined) continue;
      rateKeys += t.size;
      rateKeysEvicted += t.evicted;
      for (const e of t.extra.values()) holds += e.holds.size;
    }
    for (const m of this.leaseTables) {
      if (m === undefined) continue;
      for (const s of m.values()) leases += s.leases.size;
    }
    return {
      rateKeys,
      holds,
      leases,
      overflowDecisions: this.overflowDecisions,
      rateKeysEvicted,
      messageRecords: this.messages.size,
      messageRecordsEvicted: this.messages.evicted,
    };
  }

  /** Background step: drops full rate keys and lease keys whose leases all expired. */
  private sweep(nowMs: number): void {
    const nowUs = Math.floor(nowMs * 1000);
    for (const t of this.rates) t?.sweep(nowUs, SWEEP_BATCH);
    for (let i = 0; i < SWEEP_BATCH; i++) {
      if (this.leaseCursor === undefined) {
        const index = this.leaseTables.findIndex((m) => m !== undefined && m.size > 0);
        if (index < 0) return;
        this.leaseCursor = {
          index,
          it: (this.leaseTables[index] as Map<string, LeaseSet>).entries(),
        };
      }
      const next = this.leaseCursor.it.next();
      if (next.done) {
        const following = this.leaseTables.findIndex(
          (m, j) => j > (this.leaseCursor?.index ?? 0) && m !== undefined && m.size > 0,
        );
        this.leaseCursor =
          following < 0
            ? undefined
            : {
                index: following,
                it: (this.leaseTables[following] as Map<string, LeaseSet>).entries(),
              };
        if (following < 0) return;
        continue;
      }
      const [key, set] = next.value;
      pruneLeases(set, nowMs);
      if (set.leases.size === 0) this.leaseTables[this.leaseCursor.index]?.delete(key);
    }
  }

  private leasePolicy(index: number): LeasePolicy | undefined {
    const p = this.policySet.policies[index];
    return p === undefined || p.kind === 'rate' ? undefined : p;
  }

  private table(policy: CompiledRatePolicy): RateTable {
    return this.rates[policy.index] as RateTable;
  }

  // DecisionState (structurally; `this` is passed to the decision): never called by users, so
  // `@internal` and stripped from the shipped declarations.

  /** @internal */
  rateKey(policy: CompiledRatePolicy, key: string, nowUs: number): string {
    const t = this.table(policy);
    if (nowUs >= t.overflowUntilUs) {
      // No bucket holds state: a new key starts full (the plain path).
      if (t.size < this.maxKeys || t.has(key)) return key;
    } else if (t.has(key)) {
      return key;
    }
    if (t.size < this.maxKeys || t.evictOne(nowUs, policy.emissionUs)) {
      t.inherit(key, nowUs);
      return key;
    }
    // Every sampled key has holds: decide on the key's bucket, shared.
    t.overflowSlot = t.bucketOf(key);
    this.overflowDecisions++;
    return OVERFLOW_KEY;
  }

  /** @internal */
  getTat(policy: CompiledRatePolicy, key: string): number | undefined {
    const t = this.table(policy);
    if (key !== OVERFLOW_KEY) return t.get(key);
    return t.overflow === undefined ? undefined : t.overflow[t.overflowSlot];
  }

  /** @internal */
  getExtra(policy: CompiledRatePolicy, key: string): RateExtra | undefined {
    const extra = this.table(policy).extra;
    return extra.size === 0 || key === OVERFLOW_KEY ? undefined : extra.get(key);
  }

  /** @internal */
  putRate(
    policy: CompiledRatePolicy,
    key: string,
    tatUs: number,
    extra: RateExtra | undefined,
    nowUs: number,
  ): void {
    const t = this.table(policy);
    if (key === OVERFLOW_KEY) {
      if (tatUs > nowUs) t.mergeOverflow(t.overflowSlot, tatUs);
      return;
    }
    if (extra === undefined) {
      if (t.extra.size > 0) t.extra.delete(key);
      if (tatUs <= nowUs) t.delete(key);
      else t.set(key, tatUs);
    } else {
      t.extra.set(key, extra);
      t.set(key, tatUs);
    }
  }

  /** @internal */
  getLeases(policy: LeasePolicy, key: string): LeaseSet | undefined {
    return this.leaseTables[policy.index]?.get(key);
  }

  /** @internal */
  putLeases(policy: LeasePolicy, key: string, set: LeaseSet | undefined): void {
    const m = this.leaseTables[policy.index];
    if (m === undefined) return;
    if (set === undefined) m.delete(key);
    else m.set(key, set);
  }

  /** @internal */
  nextLeaseId(): string {
    this.leaseCounter += 1;
    return `m${this.leaseCounter.toString(36)}`;
  }
}
