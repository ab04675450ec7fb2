/**
 * @module memory-store
 * `MemoryStore`: the embedded, single-process store with a synchronous decision path, and its
 * memory bound.
 */

import { chargeUsage } from '../core/charge-usage.js';
import type { Clock } from '../core/clock.js';
import { compilePolicies } from '../core/compile-policies.js';
import type { CompiledPolicySet, CompiledRatePolicy } from '../core/compiled-policy.js';
import { decide } from '../core/decide.js';
import {
  type DecisionInput,
  type LeasePolicy,
  type LeaseSet,
  OVERFLOW_KEY,
  type RateExtra,
} from '../core/decision-state.js';
import { releaseLease, renewLease } from '../core/lease-step.js';
import { policiesOf } from '../core/policies-of.js';
import type { HoldOptions, Policy } from '../core/policy.js';
import { reservedUnitsOf } from '../core/policy-tiers.js';
import type { Decision, LeaseRef } from '../core/rejection.js';
import { systemClock } from '../platform/system-clock.js';
import { boundedInput } from './bounded-key.js';
import { LeaseTables } from './lease-tables.js';
import { type MessageRecord, MessageRecords, messageRecordKey } from './message-records.js';
import { positiveOption } from './positive-option.js';
import { RateTable } from './rate-table.js';
import type { Store, SynchronousStore } from './store.js';

/**
 * Options of {@link MemoryStore}.
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
/**
 * Most decisions between background steps: a step that freed nothing doubles the wait up to this,
 * one that freed something sets it back to {@link SWEEP_EVERY}. Tables of live keys (nothing to
 * free) are then examined 16× less often (`bench:decide`); a key that can be
 * dropped waits at most one backed-off step longer, and rate tables stay bounded by `maxKeys`.
 */
const SWEEP_EVERY_MAX = 16 * SWEEP_EVERY;

/**
 * The in-memory store: decisions are synchronous (`decideSync`) and atomic by construction.
 * Use one per process; several replicas share limits through `RedisStore` instead. Memory is
 * bounded (`maxKeys`): an evicted key's timestamp is kept, max-merged, in a hashed overflow bucket
 * that a new key starts from, so the store forgets who spent what, never that it was spent.
 *
 * @example
 * ```ts
 * const store = new MemoryStore({
 *   policies: [{ name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage'], limit: 60, windowSeconds: 60, burst: 10 }],
 * });
 * const d = store.decideSync({ caller: 'orchestrator-7', method: 'SendMessage', messageId: 'm-1' });
 * ```
 */
export class MemoryStore implements Store, SynchronousStore {
  private policies: CompiledPolicySet;
  private readonly clock: Clock;
  private readonly maxKeys: number;
  private readonly overflowBuckets: number;
  /** Deduplication records, bounded by `maxKeys`. */
  private readonly messages: MessageRecords;
  private rates: RateTable[] = [];
  private readonly leaseTables = new LeaseTables();
  /** Decisions until the next background sweep step. */
  private sweepIn = SWEEP_EVERY;
  /** Decisions between background sweep steps now (see {@link SWEEP_EVERY_MAX}). */
  private sweepEvery = SWEEP_EVERY;
  private leaseCounter = 0;
  private overflowDecisions = 0;

  constructor(options: MemoryStoreOptions) {
    this.policies = Array.isArray(options.policies)
      ? compilePolicies(options.policies as readonly Policy[], options.holds)
      : (options.policies as CompiledPolicySet);
    this.clock = options.clock ?? systemClock;
    const maxKeys = positiveOption('MemoryStore: maxKeys', options.maxKeys, 100_000, {
      integer: true,
    });
    this.maxKeys = maxKeys;
    const buckets = options.overflowBuckets ?? 2 * maxKeys;
    if (!Number.isSafeInteger(buckets) || buckets < 1 || buckets > 2 ** 30) {
      throw new RangeError(
        `MemoryStore: overflowBuckets must be an integer from 1 to 2^30, got ${buckets}`,
      );
    }
    this.overflowBuckets = 2 ** Math.ceil(Math.log2(buckets));
    this.messages = new MessageRecords(maxKeys);
    this.adopt(this.policies, []);
  }

  /** As `Store.policySet`. */
  get policySet(): CompiledPolicySet {
    return this.policies;
  }

  /**
   * As `Store.updatePolicies`. Synchronous inside: the set is swapped before this
   * returns. A policy is the same policy when its name and kind are (a rate policy that became a
   * concurrency one starts empty); its position in the set may change.
   */
  updatePolicies(next: CompiledPolicySet): Promise<void> {
    const before = this.policies;
    this.policies = next;
    this.adopt(next, before.policies);
    return Promise.resolve();
  }

  /** Builds the tables of `set`, keeping those of `previous` policies with the same name and kind. */
  private adopt(set: CompiledPolicySet, previous: CompiledPolicySet['policies']): void {
    const rates: RateTable[] = [];
    const leases: Map<string, LeaseSet>[] = [];
    for (const p of set.policies) {
      const old = previous.find((o) => o.name === p.name && o.kind === p.kind);
      rates[p.index] =
        (old === undefined ? undefined : this.rates[old.index]) ??
        new RateTable(this.overflowBuckets);
      leases[p.index] =
        (old === undefined ? undefined : this.leaseTables.of(old.index)) ?? new Map();
    }
    this.rates = rates;
    this.leaseTables.replace(leases);
  }

  /** Decides one request now, synchronously. */
  decideSync(input: DecisionInput): Decision {
    const nowMs = this.clock.nowMs();
    if (--this.sweepIn === 0) this.sweep(nowMs);
    return decide(this.policies, boundedInput(input), nowMs, this);
  }

  /** Charges reported usage, as {@link Store.chargeUsage}, synchronously. */
  chargeUsageSync(
    usage: DecisionInput,
    units: number,
    options: { readonly settle?: boolean } = {},
  ): void {
    const settle = options.settle === true;
    const nowMs = this.clock.nowMs();
    // Keyed as the decision was (bounded parts): a long caller's usage meets its own bucket.
    const request = boundedInput(usage);
    for (const p of policiesOf(this.policies, request)) {
      if (p.kind !== 'rate' || p.unit === undefined) continue;
      const key = p.keyOf(request);
      const charged = settle ? units - reservedUnitsOf(p) : units;
      if (key !== undefined) chargeUsage(p, key, charged, nowMs, this);
    }
  }

  /** As `Store.chargeUsage`. */
  chargeUsage(
    request: DecisionInput,
    units: number,
    options: { readonly settle?: boolean } = {},
  ): Promise<void> {
    this.chargeUsageSync(request, units, options);
    return Promise.resolve();
  }

  /** As `Store.decide`. */
  decide(input: DecisionInput): Promise<Decision> {
    try {
      return Promise.resolve(this.decideSync(input));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Ends leases now, synchronously; unknown leases are ignored. */
  releaseSync(leases: readonly LeaseRef[]): void {
    const nowMs = this.clock.nowMs();
    for (const lease of leases) {
      const p = this.leasePolicy(lease.policyIndex);
      if (p !== undefined) releaseLease(p, lease.key, lease.leaseId, nowMs, this);
    }
  }

  /** As `Store.release`. */
  release(leases: readonly LeaseRef[]): Promise<void> {
    this.releaseSync(leases);
    return Promise.resolve();
  }

  /** Extends leases by their TTL now, synchronously. */
  renewSync(leases: readonly LeaseRef[]): boolean[] {
    const nowMs = this.clock.nowMs();
    return leases.map((lease) => {
      const p = this.leasePolicy(lease.policyIndex);
      return p !== undefined && renewLease(p, lease.key, lease.leaseId, nowMs, this);
    });
  }

  /** As `Store.renew`. */
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
   */
  rememberMessageKeySync(key: string, ttlMs: number): MessageRecord {
    return this.messages.rememberKey(key, ttlMs, this.clock.nowMs());
  }

  /**
   * The live record of a message key, without writing one (undefined when there is none). With
   * {@link MemoryStore.rememberMessageKeySync} after a decision, a limiter records only the
   * messages it admitted: a flood of rejected copies never takes room in the table.
   */
  peekMessageKeySync(key: string): Exclude<MessageRecord, { fresh: true }> | undefined {
    return this.messages.peekKey(key, this.clock.nowMs());
  }

  /** Drops the record of a message key (nothing ran for it: the next copy is fresh). */
  forgetMessageKeySync(key: string): void {
    this.messages.forgetKey(key);
  }

  /**
   * Records a message's task, as {@link Store.recordMessageTask}, synchronously, by the record key
   * `messageRecordKey(caller, messageId)`. Throws a `RangeError` for a bad `ttlMs`.
   */
  recordMessageTaskKeySync(key: string, taskId: string, ttlMs: number): void {
    this.messages.recordKey(key, taskId, ttlMs, this.clock.nowMs());
  }

  /** As `Store.rememberMessage`. */
  rememberMessage(caller: string, messageId: string, ttlMs: number): Promise<MessageRecord> {
    try {
      return Promise.resolve(this.rememberMessageSync(caller, messageId, ttlMs));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** As `Store.recordMessageTask`. */
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
    leases += this.leaseTables.count();
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

  /**
   * Background step: drops full rate keys and spent lease keys (`isSpentLeaseSet`), and schedules
   * the next step (sooner when this one freed something).
   */
  private sweep(nowMs: number): void {
    const nowUs = Math.floor(nowMs * 1000);
    let freed = this.leaseTables.sweep(nowMs, SWEEP_BATCH);
    for (const t of this.rates) freed += t?.sweep(nowUs, SWEEP_BATCH) ?? 0;
    this.sweepEvery = freed > 0 ? SWEEP_EVERY : Math.min(2 * this.sweepEvery, SWEEP_EVERY_MAX);
    this.sweepIn = this.sweepEvery;
  }

  private leasePolicy(index: number): LeasePolicy | undefined {
    const p = this.policies.policies[index];
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
    return this.leaseTables.of(policy.index)?.get(key);
  }

  /** @internal */
  putLeases(policy: LeasePolicy, key: string, set: LeaseSet | undefined): void {
    const m = this.leaseTables.of(policy.index);
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
