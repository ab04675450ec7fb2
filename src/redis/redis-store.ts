/**
 * @module redis-store
 * `RedisStore`: the `Store` several agent replicas share. One decision is one `EVALSHA` of the
 * decision script (NOSCRIPT → `EVAL`), which makes exactly the decision of `core/decide.ts` on
 * Redis's own clock (`TIME`), so every replica sees one clock. Keys carry a Redis Cluster hash
 * tag; a request whose keys cannot share one (a caller policy plus a tenant or agent policy) is
 * decided by a two-phase reserve/refund across slots that keeps all-or-nothing. When Redis fails
 * or answers later than `timeoutMs`, the declared failure policy answers instead, and the store
 * says so through its logger, `onModeChange`, and `stats()`.
 *
 * It does not create connections: pass any {@link RedisLike} (ioredis `Redis` or `Cluster`).
 */

import { randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import {
  type DecisionInput,
  holdKeyOf,
  limitStateOf,
  policiesOf,
  rejectedDecision,
  rejectingLimitState,
} from '../core/decide.js';
import {
  type CompiledPolicy,
  type CompiledPolicySet,
  compilePolicies,
  type HoldOptions,
  type Policy,
} from '../core/policy.js';
import type { Decision, LeaseRef, LimitState, Rejection } from '../core/rejection.js';
import { boundedInput, boundedKey } from '../store/bounded-key.js';
import { MemoryStore } from '../store/memory-store.js';
import {
  checkMessageTtlMs,
  type MessageRecord,
  type PendingMessageOptions,
} from '../store/message-records.js';
import type { Store } from '../store/store.js';
import { buildDecisionScript, type DecisionScript, SCRIPT_MODES } from './decision-script.js';
import { insurancePolicies } from './insurance-policies.js';
import type { RedisLike } from './redis-like.js';

/**
 * What a `RedisStore` does when Redis fails or is slower than `timeoutMs`:
 * `fail-open` admits, `fail-closed` rejects as overload (503, `AGENT_OVERLOADED`, policy
 * `store-unavailable`, 1 s), `insurance` decides with an in-memory store whose limits are divided
 * by `replicas`.
 *
 * @example
 * ```ts
 * const onError: FailurePolicy = FAILURE_POLICIES.insurance;
 * ```
 */
export const FAILURE_POLICIES = {
  failOpen: 'fail-open',
  failClosed: 'fail-closed',
  insurance: 'insurance',
} as const;

/**
 * One of {@link FAILURE_POLICIES}.
 *
 * @example
 * ```ts
 * const policy: FailurePolicy = 'fail-closed';
 * ```
 */
export type FailurePolicy = (typeof FAILURE_POLICIES)[keyof typeof FAILURE_POLICIES];

/**
 * Who is answering: `redis`, or the failure policy while Redis is unavailable.
 *
 * @example
 * ```ts
 * store.stats().mode; // 'redis'
 * ```
 */
export type RedisStoreMode = 'redis' | FailurePolicy;

/**
 * A switch between Redis and the failure policy.
 *
 * @example
 * ```ts
 * const event: ModeChangeEvent = { from: 'redis', to: 'insurance', reason: 'timeout after 50 ms', atMs: Date.now() };
 * ```
 */
export interface ModeChangeEvent {
  readonly from: RedisStoreMode;
  readonly to: RedisStoreMode;
  /** The error that caused the switch, or `recovered`. */
  readonly reason: string;
  /** Wall-clock time of the switch, ms since the Unix epoch. */
  readonly atMs: number;
}

/**
 * Where the store writes its one-line notices (mode changes, script reloads, failed releases).
 *
 * @example
 * ```ts
 * const logger: RedisStoreLogger = { warn: (m, f) => log.warn(f, m), info: (m, f) => log.info(f, m) };
 * ```
 */
export interface RedisStoreLogger {
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

/**
 * Options of {@link RedisStore}.
 *
 * @example
 * ```ts
 * const options: RedisStoreOptions = {
 *   client: new Redis(url, RECOMMENDED_IOREDIS_OPTIONS),
 *   policies: [{ name: 'per-caller', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 }],
 *   onError: 'insurance',
 *   replicas: 4,
 * };
 * ```
 */
export interface RedisStoreOptions {
  /** The Redis client (ioredis `Redis` or `Cluster`, or any {@link RedisLike}). */
  readonly client: RedisLike;
  /** Policies, raw (validated here) or already compiled. */
  readonly policies: readonly Policy[] | CompiledPolicySet;
  /** Hold options when `policies` is raw. */
  readonly holds?: HoldOptions;
  /** The declared failure policy (required: there is no silent default). */
  readonly onError: FailurePolicy;
  /** Longest wait for one store call before the failure policy answers, ms; default 50. */
  readonly timeoutMs?: number;
  /** Agent replicas sharing this Redis; the insurance limiter divides limits by it. Default 1. */
  readonly replicas?: number;
  /** Prefix of every key; must not contain `{` or `}`. Default `a2arl:`. */
  readonly keyPrefix?: string;
  /**
   * Time source. Default: Redis `TIME` inside the script (one clock for all replicas). A given
   * clock (tests, simulation) is read here and sent with each call; Redis TTLs still run on real
   * time, so raise `keyTtlPaddingMs` to cover how far test time may lag real time.
   */
  readonly clock?: Clock;
  /** How long every key outlives the moment its state stops mattering, ms; default 1,000. */
  readonly keyTtlPaddingMs?: number;
  /** While degraded, one call per this interval tries Redis again, ms; default 1,000. */
  readonly retryIntervalMs?: number;
  /** Group keys by hash tag and split cross-slot requests; default `client.isCluster === true`. */
  readonly cluster?: boolean;
  /** Notices; default one `console.warn` / `console.info` line each. `false` silences them. */
  readonly logger?: RedisStoreLogger | false;
  /** Called on every switch between Redis and the failure policy. */
  readonly onModeChange?: (event: ModeChangeEvent) => void;
  /**
   * Coalesce single-slot decisions made in the same event-loop turn into one script call that
   * decides them in arrival order at one instant (one `TIME`, one write, one reply). Default
   * true; ignored on a Cluster.
   */
  readonly coalesce?: boolean;
  /** Call `client.quit()` on `close()`; default false (the caller owns the client). */
  readonly quitClientOnClose?: boolean;
}

/**
 * Counters for metrics (prom-client wiring lives in the server layer).
 *
 * @example
 * ```ts
 * const { mode, errors, timeouts } = store.stats();
 * ```
 */
export interface RedisStoreStats {
  /** Who answers decisions now. */
  readonly mode: RedisStoreMode;
  /** Decisions asked for. */
  readonly decisions: number;
  /** Decisions made by Redis. */
  readonly redisDecisions: number;
  /** Decisions answered by the failure policy. */
  readonly fallbackDecisions: number;
  /** Decisions that needed the two-phase cross-slot protocol. */
  readonly crossSlotDecisions: number;
  /** Decisions sent coalesced with others in one script call. */
  readonly coalescedDecisions: number;
  /** Script calls that carried coalesced decisions. */
  readonly batches: number;
  /** Store calls that failed with an error (timeouts not included). */
  readonly errors: number;
  /** Store calls that took longer than `timeoutMs`. */
  readonly timeouts: number;
  /** Switches from Redis to the failure policy. */
  readonly degradations: number;
  /** Switches back to Redis. */
  readonly recoveries: number;
  /** NOSCRIPT replies answered by re-sending the script. */
  readonly scriptLoads: number;
  /** When the current degradation began (ms since the Unix epoch), if degraded. */
  readonly degradedSinceMs: number | undefined;
}

/**
 * A store call that took longer than `timeoutMs`.
 *
 * @example
 * ```ts
 * if (error instanceof StoreTimeoutError) error.timeoutMs; // 50
 * ```
 */
export class StoreTimeoutError extends Error {
  override readonly name = 'StoreTimeoutError';
  /** The limit that was exceeded, ms. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`Redis store call took longer than ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The name of the pseudo-policy of fail-closed rejections.
 *
 * @example
 * ```ts
 * if (rejection.policy === STORE_UNAVAILABLE_POLICY) alert();
 * ```
 */
export const STORE_UNAVAILABLE_POLICY = 'store-unavailable';

const consoleLogger: RedisStoreLogger = {
  warn: (message, fields) => console.warn(`[a2a-ratelimit] ${message}`, fields ?? ''),
  info: (message, fields) => console.info(`[a2a-ratelimit] ${message}`, fields ?? ''),
};

const silentLogger: RedisStoreLogger = { warn: () => {}, info: () => {} };

/** One applicable policy of one request. */
interface RequestStep {
  readonly policy: CompiledPolicy;
  readonly tag: string;
  /** Main key (role `k`); the script derives its companion hash (role `h`). */
  readonly key: string;
  /** Takes a lease when admitted. */
  readonly takesLease: boolean;
}

/** A deadline for one store call; `expire` runs once if the call has not settled by then. */
interface Waiter {
  /** Measured from the write (re-based when a coalesced call is sent), ms of `performance.now`. */
  deadlineMs: number;
  done: boolean;
  readonly expire: () => void;
}

/** A single-slot decision waiting to be sent (alone, or coalesced with others into one call). */
interface PendingDecision {
  readonly input: DecisionInput;
  readonly steps: readonly RequestStep[];
  readonly holdKey: string;
  readonly lag: string;
  readonly leaseBase: string;
  readonly probe: boolean;
  readonly waiter: Waiter;
  readonly resolve: (decision: Decision) => void;
}

/**
 * Most decisions coalesced into one script call. Small enough that Redis starts on a batch while
 * the client is still producing the next (the two overlap instead of taking turns).
 */
const MAX_BATCH = 16;

const EMPTY_LIMITS: readonly LimitState[] = Object.freeze([]);

const FRESH: MessageRecord = Object.freeze({ fresh: true });
const SEEN: MessageRecord = Object.freeze({ fresh: false });
const ORPHANED: MessageRecord = Object.freeze({ fresh: false, orphaned: true });
const UNAVAILABLE: MessageRecord = Object.freeze({ fresh: false, unavailable: true });

/** Phase-1 result of one slot group. */
interface GroupTry {
  readonly steps: readonly number[];
  readonly admitted: boolean;
  readonly nowUs: number;
  readonly claimedHold: boolean;
  /** Per group step: tat (−1 = none). */
  readonly tats: number[];
  /** Admitted: undo code per group step. */
  readonly undo: readonly string[];
  /** Rejected: group-local setter (0-based), its delay and reserved flag (0, 1, 2 = n/a). */
  readonly setter: number;
  readonly delayUs: number;
  readonly reservedFlag: number;
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function asArray(reply: unknown): unknown[] {
  if (!Array.isArray(reply)) throw new Error(`a2a-ratelimit: unexpected script reply ${reply}`);
  return reply;
}

/**
 * The Redis-backed store. Decides exactly like `MemoryStore` (the contract suite and a
 * differential property test hold both to it), atomically in one round trip per decision when a
 * request's keys share a slot.
 *
 * **Which clock decides.** Without `clock`, each script reads `TIME` on the Redis node that runs
 * it. One slot: that node's clock alone. Cross-slot (Cluster only): each node decides its own
 * keys on its own clock; delays are durations, so only skew *during* one decision matters, and
 * the rejection's delay comes from the node that held the latest conforming time.
 *
 * **Cross-slot all-or-nothing.** Phase 1 decides every slot group in parallel; groups that admit
 * charge tentatively. If all admit, that is the admission (one parallel round). Otherwise phase 2
 * refunds the tentative charges (timestamp − T, held slots put back, leases dropped) and, when the
 * policy that set the delay may reserve, reserves the slot in its group. Between the phases other
 * requests may see the tentative charge and be told to wait slightly longer; nothing is ever
 * admitted beyond a limit.
 *
 * **Coalescing (single node).** A decision made while none is outstanding is sent at once.
 * Decisions made while one is outstanding are collected until the end of the event-loop turn and
 * sent as one script call that decides them one after the other, in arrival order, at one
 * instant — exactly what the same requests arriving together would get one by one (a test holds
 * it to `MemoryStore`), for one `TIME`, one write and one reply.
 *
 * **Modes.** Decisions drive the failure policy: a failed or late decision switches to
 * `onError`; then one decision per `retryIntervalMs` probes Redis, and the first success switches
 * back (a deduplication check probes too). While degraded, lease renewals report `true`,
 * deduplication answers `unavailable` without waiting on Redis (the limiter then never runs a
 * message it cannot check, unless told to), and releases are still attempted.
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
  /** The validated policies this store decides with. */
  readonly policySet: CompiledPolicySet;
  /** The script this store runs (text and SHA-1). */
  readonly script: DecisionScript;
  private readonly client: RedisLike;
  private readonly onError: FailurePolicy;
  private readonly timeoutMs: number;
  private readonly prefix: string;
  private readonly clock: Clock | undefined;
  private readonly retryIntervalMs: number;
  private readonly cluster: boolean;
  private readonly logger: RedisStoreLogger;
  private readonly listeners = new Set<(event: ModeChangeEvent) => void>();
  private readonly quitClientOnClose: boolean;
  private readonly insurance: MemoryStore | undefined;
  private readonly instanceId = randomBytes(6).toString('hex');
  /** `String(row.paramIndex)` by parameter row, precomputed. */
  private readonly indexArgs: readonly string[];
  private leaseCounter = 0;
  private mode: RedisStoreMode = 'redis';
  private degradedSinceMs: number | undefined;
  private nextProbeAtMs = 0;
  private probing = false;
  private closed = false;
  /** While degraded: probes Redis every `retryIntervalMs` even when no decision comes. */
  private probeTimer: ReturnType<typeof setInterval> | undefined;
  private readonly coalesce: boolean;
  /** Decisions waiting for the end of this event-loop turn, and the time they were taken at. */
  private batch: PendingDecision[] = [];
  private batchNow = '';
  private flushScheduled = false;
  /** Decision calls sent and not yet answered. */
  private callsInFlight = 0;
  /** Calls in flight, in deadline order (insertion order; one timer for all of them). */
  private readonly waiters = new Set<Waiter>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly counters = {
    decisions: 0,
    redisDecisions: 0,
    fallbackDecisions: 0,
    crossSlotDecisions: 0,
    coalescedDecisions: 0,
    batches: 0,
    errors: 0,
    timeouts: 0,
    degradations: 0,
    recoveries: 0,
    scriptLoads: 0,
  };

  constructor(options: RedisStoreOptions) {
    this.policySet = Array.isArray(options.policies)
      ? compilePolicies(options.policies as readonly Policy[], options.holds)
      : (options.policies as CompiledPolicySet);
    if (!Object.values(FAILURE_POLICIES).includes(options.onError)) {
      throw new RangeError(
        `RedisStore: onError must be one of ${Object.values(FAILURE_POLICIES).join(', ')}, got ${String(options.onError)}`,
      );
    }
    this.client = options.client;
    this.onError = options.onError;
    this.timeoutMs = positive('timeoutMs', options.timeoutMs, 50);
    this.retryIntervalMs = positive('retryIntervalMs', options.retryIntervalMs, 1000);
    const padding = positive('keyTtlPaddingMs', options.keyTtlPaddingMs, 1000);
    this.prefix = options.keyPrefix ?? 'a2arl:';
    if (/[{}]/.test(this.prefix)) {
      throw new RangeError(`RedisStore: keyPrefix must not contain { or }, got ${this.prefix}`);
    }
    this.clock = options.clock;
    this.cluster = options.cluster ?? options.client.isCluster === true;
    this.logger = options.logger === false ? silentLogger : (options.logger ?? consoleLogger);
    if (options.onModeChange !== undefined) this.listeners.add(options.onModeChange);
    this.quitClientOnClose = options.quitClientOnClose ?? false;
    this.coalesce = (options.coalesce ?? true) && !this.cluster;
    this.script = buildDecisionScript(this.policySet, padding, this.prefix);
    this.indexArgs = this.policySet.rows.map((p) => String(p.paramIndex));
    if (this.onError === 'insurance') {
      const divided = insurancePolicies(this.policySet, options.replicas ?? 1);
      this.insurance = new MemoryStore({
        policies: divided.policies,
        holds: divided.holds,
        ...(this.clock === undefined ? {} : { clock: this.clock }),
      });
    } else if (options.replicas !== undefined) {
      insurancePolicies(this.policySet, options.replicas); // validates
    }
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
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Counters and the current mode.
   *
   * @example
   * ```ts
   * store.stats().fallbackDecisions; // decisions answered while Redis was unavailable
   * ```
   */
  stats(): RedisStoreStats {
    return { mode: this.mode, degradedSinceMs: this.degradedSinceMs, ...this.counters };
  }

  /** Decides one request at Redis's time, as `Store.decide`. */
  decide(request: DecisionInput): Promise<Decision> {
    // Long values hashed exactly as MemoryStore does (bounded-key.ts): the same decisions.
    const input = boundedInput(request);
    this.counters.decisions++;
    if (this.mode === 'redis') return this.decideOnRedis(input, false);
    if (this.takeProbe()) return this.decideOnRedis(input, true);
    try {
      return Promise.resolve(this.fallbackDecision(input));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Ends leases, as `Store.release`. */
  async release(leases: readonly LeaseRef[]): Promise<void> {
    const own: LeaseRef[] = [];
    const insured: LeaseRef[] = [];
    for (const lease of leases) (this.isRedisLease(lease) ? own : insured).push(lease);
    if (insured.length > 0 && this.insurance !== undefined) this.insurance.releaseSync(insured);
    await Promise.all(
      own.map(async (lease) => {
        try {
          await this.withTimeout(
            this.run(
              [lease.key],
              [SCRIPT_MODES.release, this.now(), String(lease.policyIndex), lease.leaseId],
            ),
          );
        } catch (error) {
          this.countError(error);
          this.notice('warn', 'lease release failed; it will expire after its TTL', {
            lease: lease.leaseId,
            error: describeError(error),
          });
        }
      }),
    );
  }

  /**
   * {@inheritDoc Store.renew}
   * When Redis cannot answer, a lease is reported alive (`true`): an outage must not abort work
   * that is already running.
   */
  /**
   * Charges reported usage, as `Store.chargeUsage`: one script call per usage
   * policy key (mode `g`). While Redis is unreachable the usage is charged to the insurance
   * limiter, if any, else dropped (counted as an error).
   */
  async chargeUsage(request: DecisionInput, units: number): Promise<void> {
    const charges: Promise<unknown>[] = [];
    for (const p of policiesOf(this.policySet, request)) {
      if (p.kind !== 'rate' || p.unit === undefined) continue;
      const tableKey = p.keyOf(request);
      if (tableKey === undefined) continue;
      if (this.mode !== 'redis') continue;
      const step = this.stepOf(p, request, tableKey);
      charges.push(
        this.withTimeout(
          this.run(
            [step.key],
            [SCRIPT_MODES.usage, this.now(), String(p.paramIndex), String(units)],
          ),
        ),
      );
    }
    if (this.mode !== 'redis') this.insurance?.chargeUsageSync(request, units);
    try {
      await Promise.all(charges);
    } catch (error) {
      this.countError(error);
    }
  }

  async renew(leases: readonly LeaseRef[]): Promise<boolean[]> {
    return Promise.all(
      leases.map(async (lease) => {
        if (!this.isRedisLease(lease)) {
          return this.insurance === undefined
            ? false
            : (this.insurance.renewSync([lease])[0] ?? false);
        }
        if (this.mode !== 'redis') return true;
        try {
          const reply = await this.withTimeout(
            this.run(
              [lease.key],
              [SCRIPT_MODES.renew, this.now(), String(lease.policyIndex), lease.leaseId],
            ),
          );
          return reply === 1;
        } catch (error) {
          this.countError(error);
          return true;
        }
      }),
    );
  }

  /**
   * Records a message, as `Store.rememberMessage`. When Redis cannot answer
   * (failed, late, or degraded between probes): `unavailable` — whether this is a copy is unknown, and the limiter decides what that means (never a silent second
   * run). After a late `pending` write, the owner's pending record is dropped again right behind
   * it (same connection, so Redis runs the two in order): a decision that gave up leaves nothing
   * pending.
   */
  async rememberMessage(
    caller: string,
    messageId: string,
    ttlMs: number,
    pending?: PendingMessageOptions,
  ): Promise<MessageRecord> {
    checkMessageTtlMs(ttlMs);
    if (pending !== undefined) checkMessageTtlMs(pending.pendingTtlMs);
    const probe = this.mode !== 'redis' && this.takeProbe();
    if (this.mode !== 'redis' && !probe) return UNAVAILABLE;
    const key = this.messageKey(caller, messageId);
    try {
      const reply = asArray(
        await this.withTimeout(
          this.run(
            [key],
            [
              SCRIPT_MODES.remember,
              this.now(),
              String(ttlMs),
              pending === undefined ? '' : String(pending.pendingTtlMs),
              pending?.owner ?? '',
              pending?.takeOver === true ? '1' : '',
            ],
          ),
        ),
      );
      if (probe) this.recovered();
      if (reply[0] === 1) return FRESH;
      const taskId = String(reply[1] ?? '');
      if (taskId !== '') return { fresh: false, taskId };
      return reply[2] === 1 ? ORPHANED : SEEN;
    } catch (error) {
      if (probe) this.probing = false;
      this.countError(error);
      if (pending !== undefined && error instanceof StoreTimeoutError) {
        void this.forgetPendingMessage(caller, messageId, pending.owner, false).catch(() => {});
      }
      return UNAVAILABLE;
    }
  }

  /** Renews pending records, as `Store.renewPendingMessages`. */
  async renewPendingMessages(
    records: readonly { readonly caller: string; readonly messageId: string }[],
    owner: string,
    pendingTtlMs: number,
  ): Promise<boolean[]> {
    checkMessageTtlMs(pendingTtlMs);
    // Tried while degraded too: these are background writes (the background probe switches back).
    const answers = await Promise.all(
      records.map(async (r) => {
        const reply = await this.withTimeout(
          this.run(
            [this.messageKey(r.caller, r.messageId)],
            [SCRIPT_MODES.renewPending, this.now(), String(pendingTtlMs), owner],
          ),
        );
        return reply === 1;
      }),
    );
    return answers;
  }

  /**
   * Drops a pending record, as `Store.forgetPendingMessage`.
   * @param timed false: no deadline (a clean-up sent behind a call that timed out).
   */
  async forgetPendingMessage(
    caller: string,
    messageId: string,
    owner: string,
    timed = true,
  ): Promise<void> {
    const call = this.run(
      [this.messageKey(caller, messageId)],
      [SCRIPT_MODES.forgetPending, this.now(), owner],
    );
    await (timed ? this.withTimeout(call) : call);
  }

  /** Attaches a message's task, as `Store.recordMessageTask`. */
  async recordMessageTask(
    caller: string,
    messageId: string,
    taskId: string,
    ttlMs: number,
  ): Promise<void> {
    checkMessageTtlMs(ttlMs);
    // Tried while degraded too (the limiter writes outcomes again until one is taken).
    try {
      await this.withTimeout(
        this.run(
          [this.messageKey(caller, messageId)],
          [SCRIPT_MODES.recordTask, this.now(), String(ttlMs), taskId],
        ),
      );
    } catch (error) {
      this.countError(error);
      throw error;
    }
  }

  /** Stops answering; quits the client only when `quitClientOnClose` was set. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.listeners.clear();
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
    const policies = policiesOf(this.policySet, input);
    const steps: RequestStep[] = [];
    let leaseCount = 0;
    let single = true;
    try {
      for (const p of policies) {
        const tableKey = p.keyOf(input);
        if (tableKey === undefined) continue;
        const step = this.stepOf(p, input, tableKey);
        if (step.takesLease) leaseCount++;
        if (steps.length > 0 && step.tag !== (steps[0] as RequestStep).tag) single = false;
        steps.push(step);
      }
    } catch (error) {
      if (probe) this.probing = false;
      return Promise.reject(error);
    }
    if (steps.length === 0) {
      if (probe) this.probing = false;
      return Promise.resolve({
        admitted: true,
        limits: EMPTY_LIMITS,
        leases: [],
        claimedHold: false,
      });
    }
    const holdKey = holdKeyOf(input) ?? '';
    const lag = input.eventLoopDelayMs === undefined ? '' : String(input.eventLoopDelayMs);
    const leaseBase = leaseCount > 0 ? this.nextLeaseBase() : '';
    const now = this.now();
    if (this.cluster && !single) {
      this.counters.crossSlotDecisions++;
      return this.withTimeout(
        this.decideAcrossSlots(input, steps, { now, holdKey, lag, leaseBase }),
      ).then(
        (decision) => this.succeeded(decision, probe),
        (error: unknown) => this.failed(error, input, probe),
      );
    }
    return new Promise<Decision>((resolve) => {
      const pending: PendingDecision = {
        input,
        steps,
        holdKey,
        lag,
        leaseBase,
        probe,
        resolve,
        waiter: this.track(() =>
          resolve(this.failed(new StoreTimeoutError(this.timeoutMs), input, probe)),
        ),
      };
      // Nothing outstanding: send at once (no added latency at low load). Otherwise coalesce
      // what arrives during this event-loop turn into one call.
      if (!this.coalesce || probe || (this.callsInFlight === 0 && this.batch.length === 0)) {
        this.send([pending], now);
        return;
      }
      if (this.batch.length > 0 && this.batchNow !== now) this.flush();
      this.batchNow = now;
      this.batch.push(pending);
      if (this.batch.length >= MAX_BATCH) {
        this.flush();
        return;
      }
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flushBatch);
      }
    });
  }

  private readonly flushBatch = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  private flush(): void {
    const batch = this.batch;
    if (batch.length === 0) return;
    this.batch = [];
    this.send(batch, this.batchNow);
  }

  /** One script call for `pending` (one decision: mode d/D; several: mode b). */
  private send(pending: readonly PendingDecision[], now: string): void {
    for (const d of pending) this.rebase(d.waiter);
    const rest: string[] = [];
    for (const d of pending) for (const step of d.steps) rest.push(step.key);
    const numKeys = rest.length;
    const single = pending.length === 1 ? pending[0] : undefined;
    if (single !== undefined) {
      if (single.lag !== '' || single.leaseBase !== '') {
        rest.push(SCRIPT_MODES.decideLong, now, single.holdKey, single.lag, single.leaseBase);
      } else {
        rest.push(SCRIPT_MODES.decide, now, single.holdKey);
      }
      for (const step of single.steps) rest.push(this.indexArgs[step.policy.paramIndex] as string);
    } else {
      this.counters.batches++;
      this.counters.coalescedDecisions += pending.length;
      rest.push(SCRIPT_MODES.batch, now);
      for (const d of pending) {
        rest.push(String(d.steps.length), d.holdKey, d.lag, d.leaseBase);
        for (const step of d.steps) rest.push(this.indexArgs[step.policy.paramIndex] as string);
      }
    }
    let reloaded = false;
    this.callsInFlight++;
    const onReply = (reply: unknown) => {
      this.callsInFlight--;
      if (single !== undefined) {
        this.deliver(single, reply, 0);
        return;
      }
      const flat = Array.isArray(reply) ? (reply as unknown[]) : [];
      let offset = 0;
      for (const d of pending) {
        const length = typeof flat[offset] === 'number' ? (flat[offset] as number) : 0;
        this.deliver(d, flat, offset + 1);
        offset += 1 + length;
      }
    };
    const onError = (error: unknown) => {
      if (!reloaded && isNoScript(error)) {
        // The script cache is per node, and emptied by restarts and SCRIPT FLUSH.
        reloaded = true;
        this.counters.scriptLoads++;
        this.client.eval(this.script.text, numKeys, ...rest).then(onReply, onError);
        return;
      }
      this.callsInFlight--;
      for (const d of pending) {
        if (this.settle(d.waiter)) d.resolve(this.failed(error, d.input, d.probe));
      }
    };
    this.client.evalsha(this.script.sha1, numKeys, ...rest).then(onReply, onError);
  }

  private deliver(d: PendingDecision, reply: unknown, offset: number): void {
    if (!this.settle(d.waiter)) return;
    let decision: Decision;
    try {
      decision = this.succeeded(
        this.decisionOf(d.input, d.steps, asArray(reply), d.leaseBase, offset),
        d.probe,
      );
    } catch (error) {
      decision = this.failed(error, d.input, d.probe);
    }
    d.resolve(decision);
  }

  private succeeded(decision: Decision, probe: boolean): Decision {
    this.counters.redisDecisions++;
    // Only a probe switches back: a reply to a call sent before the switch says nothing about
    // Redis now, and flapping back and forth would hand each switch a fresh insurance burst.
    if (probe) {
      this.probing = false;
      if (this.mode !== 'redis') this.setMode('redis', 'recovered');
    }
    return decision;
  }

  /** One timed call that touches nothing (a missing key's pending record); success = recovered. */
  private readonly backgroundProbe = (): void => {
    if (this.mode === 'redis' || !this.takeProbe()) return;
    this.withTimeout(
      this.run([`${this.prefix}probe`], [SCRIPT_MODES.forgetPending, this.now(), '-']),
    ).then(
      () => this.recovered(),
      (error: unknown) => {
        this.probing = false;
        this.countError(error);
      },
    );
  };

  /** A probe other than a decision (a deduplication check) reached Redis. */
  private recovered(): void {
    this.probing = false;
    if (this.mode !== 'redis') this.setMode('redis', 'recovered');
  }

  private failed(error: unknown, input: DecisionInput, probe: boolean): Decision {
    if (probe) this.probing = false;
    this.noteFailure(error);
    return this.fallbackDecision(input);
  }

  /** The Decision from a `d` reply starting at `reply[o]` (see DECISION_SCRIPT_BODY). */
  private decisionOf(
    input: DecisionInput,
    steps: readonly RequestStep[],
    reply: unknown[],
    leaseBase: string,
    o = 0,
  ): Decision {
    const nowUs = reply[o + 1] as number;
    const limits: LimitState[] = [];
    if (reply[o] === 1) {
      const leases: LeaseRef[] = [];
      for (let i = 0; i < steps.length; i++) {
        const s = steps[i] as RequestStep;
        const p = s.policy;
        if (p.kind === 'rate') limits.push(limitStateOf(p, reply[o + 3 + i] as number, nowUs));
        else if (s.takesLease) {
          leases.push({ policyIndex: p.index, key: s.key, leaseId: `${leaseBase}.${i + 1}` });
        }
      }
      return { admitted: true, limits, leases, claimedHold: reply[o + 2] === 1 };
    }
    if (reply[o] !== 0) throw new Error(`a2a-ratelimit: unexpected script reply ${reply[o]}`);
    const setterIndex = (reply[o + 2] as number) - 1;
    const delayUs = reply[o + 3] as number;
    const flag = reply[o + 4] as number;
    for (let i = 0; i < steps.length; i++) {
      const p = (steps[i] as RequestStep).policy;
      if (p.kind !== 'rate') continue;
      const tat = reply[o + 5 + i] as number;
      limits.push(
        i === setterIndex
          ? rejectingLimitState(p, delayUs)
          : limitStateOf(p, tat < 0 ? undefined : tat, nowUs),
      );
    }
    const reserved = flag === 2 ? undefined : flag === 1;
    return rejectedDecision(steps[setterIndex] as RequestStep, input, delayUs, reserved, limits);
  }

  private async decideAcrossSlots(
    input: DecisionInput,
    steps: readonly RequestStep[],
    call: { now: string; holdKey: string; lag: string; leaseBase: string },
  ): Promise<Decision> {
    const byTag = new Map<string, number[]>();
    steps.forEach((s, i) => {
      const group = byTag.get(s.tag);
      if (group === undefined) byTag.set(s.tag, [i]);
      else group.push(i);
    });
    const groups = [...byTag.values()];
    const settled = await Promise.allSettled(
      groups.map(async (group): Promise<GroupTry> => {
        const reply = asArray(
          await this.run(
            this.keysOf(steps, group),
            call.lag !== '' || call.leaseBase !== ''
              ? [
                  SCRIPT_MODES.tryGroupLong,
                  call.now,
                  call.holdKey,
                  call.lag,
                  call.leaseBase,
                  ...indicesOf(steps, group),
                ]
              : [SCRIPT_MODES.tryGroup, call.now, call.holdKey, ...indicesOf(steps, group)],
          ),
        );
        const n = group.length;
        if (reply[0] === 1) {
          return {
            steps: group,
            admitted: true,
            nowUs: reply[1] as number,
            claimedHold: reply[2] === 1,
            tats: reply.slice(3, 3 + n) as number[],
            undo: reply.slice(3 + n, 3 + 2 * n).map(String),
            setter: -1,
            delayUs: 0,
            reservedFlag: 2,
          };
        }
        return {
          steps: group,
          admitted: false,
          nowUs: reply[1] as number,
          claimedHold: false,
          tats: reply.slice(5, 5 + n) as number[],
          undo: [],
          setter: (reply[2] as number) - 1,
          delayUs: reply[3] as number,
          reservedFlag: reply[4] as number,
        };
      }),
    );
    const tries: GroupTry[] = [];
    let failure: unknown;
    for (const r of settled) {
      if (r.status === 'fulfilled') tries.push(r.value);
      else failure ??= r.reason;
    }
    if (failure !== undefined) {
      // Give back what the groups that did answer charged, then let the failure policy decide.
      void this.undoGroups(
        tries.filter((t) => t.admitted),
        steps,
        call,
      ).catch(() => {});
      throw failure;
    }

    const stepNowUs: number[] = [];
    const stepTat: number[] = [];
    const record = (t: GroupTry, tats: readonly number[], nowUs: number) => {
      t.steps.forEach((stepIndex, j) => {
        stepTat[stepIndex] = tats[j] as number;
        stepNowUs[stepIndex] = nowUs;
      });
    };
    for (const t of tries) record(t, t.tats, t.nowUs);

    if (tries.every((t) => t.admitted)) {
      const limits: LimitState[] = [];
      const leases: LeaseRef[] = [];
      for (const t of tries) {
        t.steps.forEach((stepIndex, j) => {
          const s = steps[stepIndex] as RequestStep;
          if (s.takesLease) {
            leases.push({
              policyIndex: s.policy.index,
              key: s.key,
              leaseId: `${call.leaseBase}.${j + 1}`,
            });
          }
        });
      }
      leases.sort((a, b) => a.policyIndex - b.policyIndex);
      steps.forEach((s, i) => {
        if (s.policy.kind === 'rate') {
          limits.push(limitStateOf(s.policy, stepTat[i] as number, stepNowUs[i] as number));
        }
      });
      return { admitted: true, limits, leases, claimedHold: tries.some((t) => t.claimedHold) };
    }

    // Rejected: the latest conforming time among the rejecting groups sets the delay (the
    // earliest policy in declared order on a tie, as in core).
    let setterGroup: GroupTry | undefined;
    let setterStep = -1;
    for (const t of tries) {
      if (t.admitted) continue;
      const stepIndex = t.steps[t.setter] as number;
      if (
        setterGroup === undefined ||
        t.delayUs > setterGroup.delayUs ||
        (t.delayUs === setterGroup.delayUs && stepIndex < setterStep)
      ) {
        setterGroup = t;
        setterStep = stepIndex;
      }
    }
    const group = setterGroup as GroupTry;
    const setter = steps[setterStep] as RequestStep;
    let delayUs = group.delayUs;
    let reserved: boolean | undefined =
      group.reservedFlag === 2 ? undefined : group.reservedFlag === 1;
    const mayReserve =
      setter.policy.kind === 'rate' &&
      setter.policy.callerScoped &&
      call.holdKey !== '' &&
      group.reservedFlag === 0;
    const [undone, reservation] = await Promise.allSettled([
      this.undoGroups(
        tries.filter((t) => t.admitted),
        steps,
        call,
      ),
      mayReserve
        ? this.run(
            [setter.key],
            [SCRIPT_MODES.reserve, call.now, call.holdKey, String(setter.policy.paramIndex)],
          )
        : Promise.resolve(undefined),
    ]);
    if (undone.status === 'fulfilled') {
      for (const [t, reply] of undone.value)
        record(t, reply.slice(1) as number[], reply[0] as number);
    } else {
      this.countError(undone.reason);
      this.notice('warn', 'cross-slot refund failed; tentative charges stay until they expire', {
        error: describeError(undone.reason),
      });
    }
    if (reservation.status === 'fulfilled' && reservation.value !== undefined) {
      const reply = asArray(reservation.value);
      if (reply[2] === 1) {
        reserved = true;
        delayUs = reply[1] as number;
      }
    } else if (reservation.status === 'rejected') {
      this.countError(reservation.reason);
    }
    const limits: LimitState[] = [];
    steps.forEach((s, i) => {
      if (s.policy.kind !== 'rate') return;
      const tat = stepTat[i] as number;
      limits.push(
        i === setterStep
          ? rejectingLimitState(s.policy, delayUs)
          : limitStateOf(s.policy, tat < 0 ? undefined : tat, stepNowUs[i] as number),
      );
    });
    return rejectedDecision(setter, input, delayUs, reserved, limits);
  }

  private async undoGroups(
    admitted: readonly GroupTry[],
    steps: readonly RequestStep[],
    call: { now: string; holdKey: string; leaseBase: string },
  ): Promise<[GroupTry, unknown[]][]> {
    return Promise.all(
      admitted.map(async (t): Promise<[GroupTry, unknown[]]> => {
        const reply = await this.run(this.keysOf(steps, t.steps), [
          SCRIPT_MODES.undo,
          call.now,
          call.holdKey,
          call.leaseBase,
          ...indicesOf(steps, t.steps),
          ...t.undo,
        ]);
        return [t, asArray(reply)];
      }),
    );
  }

  // Plumbing.

  private async run(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await this.client.evalsha(this.script.sha1, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      this.counters.scriptLoads++;
      return this.client.eval(this.script.text, keys.length, ...keys, ...args);
    }
  }

  private keysOf(steps: readonly RequestStep[], indices: readonly number[]): string[] {
    return indices.map((i) => (steps[i] as RequestStep).key);
  }

  /**
   * A policy's key for a request: `prefix k {tag} name \0 tableKey`. The hash tag is a function
   * of the key alone, so one key always lives in one slot: caller-scoped keys share the caller's
   * tag, tenant keys the tenant's, the others their own. `}` is replaced in the tag (the tag only
   * chooses the slot) and policy names cannot contain `\0`, so a key decodes uniquely.
   */
  private stepOf(p: CompiledPolicy, input: DecisionInput, tableKey: string): RequestStep {
    let tag: string;
    if (p.callerScoped) {
      tag = `c:${input.caller}`;
    } else {
      const scope = (p.source as { readonly scope?: unknown }).scope;
      tag =
        scope === 'tenant' || scope === 'tenant+method'
          ? `t:${input.tenant || '-'}`
          : `s:${tableKey}`;
    }
    if (tag.includes('}')) tag = tag.replaceAll('}', ')');
    return {
      policy: p,
      tag,
      key: `${this.prefix}k{${tag}}${p.name}\u0000${tableKey}`,
      takesLease:
        p.kind === 'concurrency' || (p.kind === 'overload' && Number.isFinite(p.maxInFlight)),
    };
  }

  private messageKey(caller: string, messageId: string): string {
    const c = boundedKey(caller);
    const tag = c.includes('}') ? c.replaceAll('}', ')') : c;
    return `${this.prefix}d{c:${tag}}${c}\u0000${boundedKey(messageId)}`;
  }

  private now(): string {
    return this.clock === undefined ? '' : String(this.clock.nowMs());
  }

  private nextLeaseBase(): string {
    this.leaseCounter += 1;
    return `r${this.instanceId}${this.leaseCounter.toString(36)}`;
  }

  private isRedisLease(lease: LeaseRef): boolean {
    return lease.leaseId.startsWith('r') && lease.key.startsWith(this.prefix);
  }

  private withTimeout<T>(promise: Promise<T>): Promise<T> {
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

  /**
   * Registers a deadline `timeoutMs` from now; `settle` removes it. One timer serves every call in
   * flight: deadlines arrive in order, so it only ever looks at the oldest one.
   */
  private track(expire: () => void): Waiter {
    const waiter: Waiter = { deadlineMs: performance.now() + this.timeoutMs, done: false, expire };
    this.waiters.add(waiter);
    if (this.timer === undefined) this.arm(this.timeoutMs);
    return waiter;
  }

  /** Marks a call settled; false when its deadline already expired it. */
  private settle(waiter: Waiter): boolean {
    if (waiter.done) return false;
    waiter.done = true;
    this.waiters.delete(waiter);
    return true;
  }

  private arm(inMs: number): void {
    this.timer = setTimeout(this.onDeadline, Math.max(1, Math.ceil(inMs)));
    this.timer.unref?.();
  }

  /**
   * Re-bases a waiter's deadline on now: a coalesced decision's call is written at the end of the
   * event-loop turn, and the deadline measures the store from that write. (Now + timeout is the
   * latest deadline there is, so the set stays in deadline order.)
   */
  private rebase(waiter: Waiter): void {
    if (waiter.done) return;
    this.waiters.delete(waiter);
    waiter.deadlineMs = performance.now() + this.timeoutMs;
    this.waiters.add(waiter);
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

  // Failure policy.

  private takeProbe(): boolean {
    const nowMs = performance.now();
    if (this.probing || nowMs < this.nextProbeAtMs) return false;
    this.probing = true;
    this.nextProbeAtMs = nowMs + this.retryIntervalMs;
    return true;
  }

  private countError(error: unknown): void {
    if (error instanceof StoreTimeoutError) this.counters.timeouts++;
    else this.counters.errors++;
  }

  private noteFailure(error: unknown): void {
    this.countError(error);
    if (this.mode === 'redis') {
      this.nextProbeAtMs = performance.now() + this.retryIntervalMs;
      this.setMode(this.onError, describeError(error));
    }
  }

  private setMode(to: RedisStoreMode, reason: string): void {
    const from = this.mode;
    if (from === to) return;
    this.mode = to;
    const atMs = Date.now();
    if (to === 'redis') {
      this.counters.recoveries++;
      this.degradedSinceMs = undefined;
      clearInterval(this.probeTimer);
      this.probeTimer = undefined;
    } else {
      this.counters.degradations++;
      this.degradedSinceMs = atMs;
      // Back to shared state as soon as Redis answers, not at the next decision that probes: a
      // replica left on its insurance limits after an outage would keep admitting its own share.
      if (this.probeTimer === undefined && !this.closed) {
        this.probeTimer = setInterval(this.backgroundProbe, this.retryIntervalMs);
        this.probeTimer.unref?.();
      }
    }
    const event: ModeChangeEvent = { from, to, reason, atMs };
    if (to === 'redis')
      this.notice('info', 'Redis store recovered; decisions back on Redis', event);
    else this.notice('warn', `Redis store unavailable; answering ${to}`, event);
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // Same for a failing listener.
      }
    }
  }

  private notice(
    level: 'info' | 'warn',
    message: string,
    fields: Readonly<Record<string, unknown>> | ModeChangeEvent,
  ): void {
    try {
      this.logger[level](message, { ...fields });
    } catch {
      // A failing logger must not fail a decision.
    }
  }

  private fallbackDecision(input: DecisionInput): Decision {
    this.counters.fallbackDecisions++;
    switch (this.onError) {
      case 'fail-open':
        return { admitted: true, limits: [], leases: [], claimedHold: false };
      case 'fail-closed':
        return { admitted: false, rejection: storeUnavailable(input), limits: [] };
      case 'insurance':
        try {
          return (this.insurance as MemoryStore).decideSync(input);
        } catch {
          // Only a policy's own key function can throw here; answer as fail-closed would.
          return { admitted: false, rejection: storeUnavailable(input), limits: [] };
        }
    }
  }
}

function indicesOf(steps: readonly RequestStep[], group: readonly number[]): string[] {
  return group.map((i) => String((steps[i] as RequestStep).policy.paramIndex));
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(value > 0 && Number.isFinite(value))) {
    throw new RangeError(`RedisStore: ${name} must be a positive number of ms, got ${value}`);
  }
  return value;
}

function storeUnavailable(input: DecisionInput): Rejection {
  return {
    kind: 'overload',
    retryAfterMs: 1000,
    policy: STORE_UNAVAILABLE_POLICY,
    scope: 'agent',
    subject: 'agent',
    method: input.method,
    message:
      'Agent overloaded (store-unavailable: the rate-limit store cannot be reached); retry in 1 s',
  };
}
