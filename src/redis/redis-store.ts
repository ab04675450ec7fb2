/**
 * @module redis-store
 * `RedisStore`: wiring and public methods of the `Store` several agent replicas share.
 */

import { randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import { compilePolicies } from '../core/compile-policies.js';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { DecisionInput } from '../core/decision-state.js';
import { policiesOf } from '../core/policies-of.js';
import type { Policy } from '../core/policy.js';
import { reservedUnitsOf } from '../core/policy-tiers.js';
import { holdKeyOf } from '../core/rate-holds.js';
import type { Decision, LeaseRef, LimitState } from '../core/rejection.js';
import { boundedInput } from '../store/bounded-key.js';
import type { MessageRecord, PendingMessageOptions } from '../store/message-records.js';
import type { Store } from '../store/store.js';
import { CoalescingBatcher, type PendingDecision } from './coalescing-batcher.js';
import { decideAcrossSlots } from './cross-slot.js';
import { DeadlineTimer } from './deadline-timer.js';
import { type DecisionScript, SCRIPT_MODES } from './decision-script.js';
import { FailureMode } from './failure-mode.js';
import { LivePolicySet } from './live-policy-set.js';
import { probeKey, type RequestStep, redisKeyPart, requestStep } from './redis-keys.js';
import { releaseLeases, renewLeases } from './redis-leases.js';
import type { RedisLike } from './redis-like.js';
import {
  forgetPendingMessage,
  recordMessageTask,
  rememberMessage,
  renewPendingMessages,
} from './redis-message-records.js';
import type { RedisRooms } from './redis-rooms.js';
import {
  FAILURE_POLICIES,
  loggerOf,
  type ModeChangeEvent,
  positiveMs,
  type RedisStoreLogger,
  type RedisStoreOptions,
  type RedisStoreStats,
} from './redis-store-options.js';
import { ScriptRunner } from './script-runner.js';
import { StoreTimeoutError } from './store-timeout-error.js';

const EMPTY_LIMITS: readonly LimitState[] = Object.freeze([]);

/**
 * The Redis-backed store. Decides exactly like `MemoryStore` (the contract suite and a
 * differential property test hold both to it), atomically in one round trip per decision when a
 * request's keys share a slot. It creates no connection: pass any {@link RedisLike} (ioredis
 * `Redis` or `Cluster`).
 *
 * **Which clock decides.** Without `clock`, each script reads `TIME` on the Redis node that runs
 * it. One slot: that node's clock alone. Cross-slot (Cluster only): each node decides its own
 * keys on its own clock; delays are durations, so only skew *during* one decision matters, and
 * the rejection's delay comes from the node that held the latest conforming time. A request
 * whose keys cannot share a slot is decided by the two-phase protocol of `cross-slot.ts`.
 *
 * **Coalescing (single node).** Decisions made while one is outstanding are sent together and
 * decided in arrival order at one instant (`coalescing-batcher.ts`).
 *
 * **Modes.** Decisions drive the failure policy: a failed or late decision switches to
 * `onError`; then one decision per `retryIntervalMs` probes Redis, and the first success switches
 * back (a deduplication check probes too). While degraded, lease renewals report `true`,
 * deduplication answers `unavailable` without waiting on Redis (the limiter then never runs a
 * message it cannot check, unless told to), and releases are still attempted.
 *
 * **Live policy changes.** `updatePolicies` swaps the set here and publishes it; the other stores
 * on the prefix adopt it within `policyPollIntervalMs` and tell their `onPoliciesChanged`
 * listeners. State is kept per policy name (see `docs/redis.md`).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { RECOMMENDED_IOREDIS_OPTIONS, RedisStore } from 'a2a-ratelimit/redis';
 *
 * const store = new RedisStore({
 *   client: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', RECOMMENDED_IOREDIS_OPTIONS),
 *   policies: [{ name: 'per-caller', kind: 'rate', scope: 'caller', limit: 60, windowSeconds: 60, burst: 10 }],
 *   onError: 'insurance',
 *   replicas: 3,
 * });
 * const d = await store.decide({ caller: 'orchestrator-7', method: 'SendMessage', messageId: 'm-1' });
 * ```
 */
export class RedisStore implements Store {
  private readonly client: RedisLike;
  private readonly prefix: string;
  private readonly clock: Clock | undefined;
  private readonly cluster: boolean;
  private readonly logger: RedisStoreLogger;
  private readonly quitClientOnClose: boolean;
  private readonly instanceId = randomBytes(6).toString('hex');
  private readonly rooms: RedisRooms;
  private readonly batcher: CoalescingBatcher;
  private leaseCounter = 0;
  private closed = false;
  private readonly counters = { decisions: 0, crossSlotDecisions: 0 };

  constructor(options: RedisStoreOptions) {
    const set = Array.isArray(options.policies)
      ? compilePolicies(options.policies as readonly Policy[], options.holds)
      : (options.policies as CompiledPolicySet);
    if (!Object.values(FAILURE_POLICIES).includes(options.onError)) {
      throw new RangeError(
        `RedisStore: onError must be one of ${Object.values(FAILURE_POLICIES).join(', ')}, got ${String(options.onError)}`,
      );
    }
    this.client = options.client;
    const timeoutMs = positiveMs('timeoutMs', options.timeoutMs, 50);
    const retryIntervalMs = positiveMs('retryIntervalMs', options.retryIntervalMs, 1000);
    this.prefix = options.keyPrefix ?? 'a2arl:';
    if (/[{}]/.test(this.prefix)) {
      throw new RangeError(`RedisStore: keyPrefix must not contain { or }, got ${this.prefix}`);
    }
    this.clock = options.clock;
    this.cluster = options.cluster ?? options.client.isCluster === true;
    this.logger = loggerOf(options.logger);
    this.quitClientOnClose = options.quitClientOnClose ?? false;
    // Built in dependency order, each whole: calls to Redis, the policy set (its script and
    // insurance limiter), the failure modes, then the rooms that use them.
    const runner = new ScriptRunner({
      client: this.client,
      prefix: this.prefix,
      deadlines: new DeadlineTimer(timeoutMs),
      clock: this.clock,
    });
    const policies = new LivePolicySet({
      initial: set,
      runner,
      keyTtlPaddingMs: positiveMs('keyTtlPaddingMs', options.keyTtlPaddingMs, 1000),
      onError: options.onError,
      replicas: options.replicas,
      clock: this.clock,
      logger: this.logger,
      pollIntervalMs:
        options.policyPollIntervalMs === false
          ? false
          : positiveMs('policyPollIntervalMs', options.policyPollIntervalMs, 500),
    });
    const failure = new FailureMode({
      onError: options.onError,
      retryIntervalMs,
      logger: this.logger,
      probe: () =>
        runner.timed(
          policies.script,
          [probeKey(this.prefix)],
          [SCRIPT_MODES.forgetPending, runner.now(), '-'],
        ),
      policies,
    });
    if (options.onModeChange !== undefined) failure.listeners.add(options.onModeChange);
    this.rooms = { runner, policies, failure, logger: this.logger };
    this.batcher = new CoalescingBatcher(this.rooms, (options.coalesce ?? true) && !this.cluster);
  }

  /** The validated policies this store decides with now. */
  get policySet(): CompiledPolicySet {
    return this.rooms.policies.set;
  }

  /** The script this store runs now (text and SHA-1). @internal */
  get script(): DecisionScript {
    return this.rooms.policies.script;
  }

  /**
   * Subscribes to mode changes; returns the unsubscribe function.
   *
   * @example
   * ```ts
   * const off = store.on('modechange', (e) => metrics.mode.set({ mode: e.to }, 1));
   * ```
   */
  on(event: 'modechange', listener: (event: ModeChangeEvent) => void): () => void {
    if (event !== 'modechange') throw new RangeError(`RedisStore: unknown event ${String(event)}`);
    const { listeners } = this.rooms.failure;
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  /** Counters, the current mode and the policy set's version and generation. */
  stats(): RedisStoreStats {
    const { runner, policies, failure } = this.rooms;
    return {
      mode: failure.mode,
      degradedSinceMs: failure.degradedSinceMs,
      ...this.counters,
      ...failure.counters,
      coalescedDecisions: this.batcher.coalescedDecisions,
      batches: this.batcher.batches,
      scriptLoads: runner.scriptLoads,
      policySetVersion: policies.version,
      policyGeneration: policies.generation,
    };
  }

  /** As `Store.decide`. */
  decide(request: DecisionInput): Promise<Decision> {
    // Long values hashed exactly as MemoryStore does (bounded-key.ts): the same decisions.
    const input = boundedInput(request);
    this.counters.decisions++;
    const { failure } = this.rooms;
    if (failure.mode === 'redis') return this.decideOnRedis(input, false);
    if (failure.takeProbe()) return this.decideOnRedis(input, true);
    try {
      return Promise.resolve(failure.fallbackDecision(input));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * As `Store.updatePolicies`.
   * Here: script, rows and insurance limiter rebuilt, then the set published under
   * `<prefix>policy-set` (rejects when that fails; this store already uses `next`). A removed
   * policy's keys and leases are left to expire; a policy may not change kind under one name.
   */
  updatePolicies(next: CompiledPolicySet): Promise<void> {
    return this.rooms.policies.update(next);
  }

  /** As `Store.onPoliciesChanged`. */
  onPoliciesChanged(listener: (set: CompiledPolicySet) => void): () => void {
    return this.rooms.policies.onChanged(listener);
  }

  /**
   * As `Store.chargeUsage`. One script call per usage policy key (mode `g`). While Redis
   * is unreachable the usage is charged to the insurance limiter, if any, else dropped (counted
   * as an error).
   */
  async chargeUsage(
    usage: DecisionInput,
    units: number,
    options: { readonly settle?: boolean } = {},
  ): Promise<void> {
    const settle = options.settle === true;
    // Keyed as the decision was (bounded parts): a long caller's usage meets its own bucket.
    const request = boundedInput(usage);
    const { runner, policies, failure } = this.rooms;
    const charges: Promise<unknown>[] = [];
    const onRedis = failure.mode === 'redis';
    for (const p of policiesOf(policies.set, request)) {
      if (p.kind !== 'rate' || p.unit === undefined) continue;
      const tableKey = p.keyOf(request);
      if (tableKey === undefined || !onRedis) continue;
      const step = requestStep(this.prefix, p, request, tableKey);
      charges.push(
        runner.timed(
          policies.script,
          [step.key],
          [
            SCRIPT_MODES.usage,
            runner.now(),
            String(p.paramIndex),
            String(settle ? units - reservedUnitsOf(p) : units),
          ],
        ),
      );
    }
    if (!onRedis) policies.insurance?.chargeUsageSync(request, units, options);
    try {
      await Promise.all(charges);
    } catch (error) {
      failure.countError(error);
    }
  }

  /** As `Store.release`. */
  release(leases: readonly LeaseRef[]): Promise<void> {
    return releaseLeases(this.rooms, leases);
  }

  /**
   * As `Store.renew`.
   * When Redis cannot answer, a lease is reported alive (`true`): an outage must not abort work
   * that is already running. A lease of a policy the current set no longer has is reported gone.
   */
  renew(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return renewLeases(this.rooms, leases);
  }

  /**
   * As `Store.rememberMessage`.
   * When Redis cannot answer (failed, late, or degraded between probes): `unavailable` (see
   * `redis-message-records.ts`).
   */
  rememberMessage(
    caller: string,
    messageId: string,
    ttlMs: number,
    pending?: PendingMessageOptions,
  ): Promise<MessageRecord> {
    return rememberMessage(this.rooms, caller, messageId, ttlMs, pending);
  }

  /** As `Store.renewPendingMessages`. */
  renewPendingMessages(
    records: readonly { readonly caller: string; readonly messageId: string }[],
    owner: string,
    pendingTtlMs: number,
  ): Promise<boolean[]> {
    return renewPendingMessages(this.rooms, records, owner, pendingTtlMs);
  }

  /** As `Store.forgetPendingMessage`. */
  forgetPendingMessage(caller: string, messageId: string, owner: string): Promise<void> {
    return forgetPendingMessage(this.rooms, caller, messageId, owner, true);
  }

  /** As `Store.recordMessageTask`. */
  recordMessageTask(
    caller: string,
    messageId: string,
    taskId: string,
    ttlMs: number,
  ): Promise<void> {
    return recordMessageTask(this.rooms, caller, messageId, taskId, ttlMs);
  }

  /** Stops answering and polling; quits the client only when `quitClientOnClose` was set. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.rooms.failure.close();
    this.rooms.policies.close();
    if (this.quitClientOnClose && typeof this.client.quit === 'function') {
      try {
        await this.client.quit();
      } catch {
        // Already disconnected: nothing left to free.
      }
    }
  }

  // Decision.

  private decideOnRedis(input: DecisionInput, probe: boolean): Promise<Decision> {
    const { runner, policies, failure } = this.rooms;
    // The script and the rows of one set: a swap during this decision does not mix them.
    const script = policies.script;
    const steps: RequestStep[] = [];
    let leaseCount = 0;
    let single = true;
    try {
      for (const p of policiesOf(policies.set, input)) {
        const tableKey = p.keyOf(input);
        if (tableKey === undefined) continue;
        const step = requestStep(this.prefix, p, input, tableKey);
        if (step.takesLease) leaseCount++;
        if (steps.length > 0 && step.tag !== (steps[0] as RequestStep).tag) single = false;
        steps.push(step);
      }
    } catch (error) {
      if (probe) failure.probeFailed();
      return Promise.reject(error);
    }
    if (steps.length === 0) {
      if (probe) failure.probeFailed();
      return Promise.resolve({
        admitted: true,
        limits: EMPTY_LIMITS,
        leases: [],
        claimedHold: false,
      });
    }
    const hold = holdKeyOf(input);
    const holdKey = hold === undefined ? '' : redisKeyPart(hold);
    const lag = input.eventLoopDelayMs === undefined ? '' : String(input.eventLoopDelayMs);
    const leaseBase = leaseCount > 0 ? this.nextLeaseBase() : '';
    const now = runner.now();
    if (this.cluster && !single) {
      this.counters.crossSlotDecisions++;
      return runner.deadlines
        .withTimeout(
          decideAcrossSlots(this.rooms, script, input, steps, { now, holdKey, lag, leaseBase }),
        )
        .then(
          (decision) => failure.succeeded(decision, probe),
          (error: unknown) => failure.failed(error, input, probe),
        );
    }
    return new Promise<Decision>((resolve) => {
      const pending: PendingDecision = {
        script,
        input,
        steps,
        holdKey,
        lag,
        leaseBase,
        probe,
        resolve,
        waiter: runner.deadlines.track(() =>
          resolve(failure.failed(new StoreTimeoutError(runner.deadlines.timeoutMs), input, probe)),
        ),
      };
      this.batcher.submit(pending, now);
    });
  }

  // Plumbing.

  private nextLeaseBase(): string {
    this.leaseCounter += 1;
    return `r${this.instanceId}${this.leaseCounter.toString(36)}`;
  }
}
