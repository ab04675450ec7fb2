/**
 * @module limiter
 * `createLimiter`: the one place that turns an identified request into one admission decision
 * and a rejection into its wire form, shared by every adapter (Express JSON-RPC and REST, grpc-js).
 * It also owns what follows an admission: concurrency leases held until the task ends or the
 * response closes, renewal of live leases, deduplication of retried messages by messageId, the
 * event-loop overload signal, and the observer calls that metrics hang off.
 */

import { type A2AMethod, MESSAGE_METHODS } from '../core/a2a-methods.js';
import type { Clock } from '../core/clock.js';
import type { DecisionInput } from '../core/decide.js';
import type { CompiledPolicySet, HoldOptions, Policy, RequestIdentity } from '../core/policy.js';
import {
  type Admission,
  type Decision,
  type LeaseRef,
  type LimitState,
  REASONS,
  type Rejection,
} from '../core/rejection.js';
import { MemoryStore } from '../store/memory-store.js';
import { messageRecordKey } from '../store/message-records.js';
import type { MessageRecord, Store } from '../store/store.js';
import {
  encodeGrpcRejection,
  encodeJsonRpcRejection,
  encodeRestRejection,
  type GrpcRejectionStatus,
  type HttpRejectionResponse,
  rateLimitHeaders,
} from '../wire/index.js';
import {
  type EventLoopDelaySource,
  type EventLoopMonitorOptions,
  monitorEventLoop,
} from './event-loop-monitor.js';
import { type AgentCardLike, resolveOperatorDomain } from './operator-domain.js';
import { PendingMessages } from './pending-messages.js';
import { ShadowLog } from './shadow-log.js';
import { type EventBusManagerLike, TaskLeaseTracker } from './task-lease-tracker.js';
import { type TaskRef, TaskUsageBook, type TaskUsageReporter } from './task-usage.js';

/**
 * The A2A binding a request arrived on.
 *
 * @example
 * ```ts
 * const binding: Binding = 'jsonrpc';
 * ```
 */
export type Binding = 'jsonrpc' | 'rest' | 'grpc';

/**
 * One request as an adapter identified it.
 *
 * @example
 * ```ts
 * const request: AdmissionRequest = { caller: 'orchestrator-7', method: 'SendMessage', messageId: 'm-1', binding: 'rest' };
 * ```
 */
export interface AdmissionRequest extends RequestIdentity {
  readonly binding: Binding;
}

/**
 * How long a concurrency lease taken at admission is held: until the task reaches a terminal
 * (or, by default, interrupted) state, or until the response ends (stream closed, client gone).
 *
 * @example
 * ```ts
 * const until: LeaseHoldUntil = 'response';
 * ```
 */
export type LeaseHoldUntil = 'task' | 'response';

/**
 * Receives every outcome; metrics (`a2a-ratelimit/server/metrics`) implement it.
 *
 * @example
 * ```ts
 * const observer: LimiterObserver = { rejected: (req, r) => console.log(req.caller, r.policy) };
 * ```
 */
export interface LimiterObserver {
  /** A request was admitted (after being charged, or by claiming its held slot). */
  admitted?(request: AdmissionRequest, admission: Admission): void;
  /** A request was rejected; nothing was created or started. */
  rejected?(request: AdmissionRequest, rejection: Rejection): void;
  /** A copy of an already admitted message was answered with the existing task (not charged). */
  deduplicated?(request: AdmissionRequest): void;
  /** Holds made, claimed, or expired unclaimed, per rate policy (as seen by this process). */
  holds?(event: 'made' | 'claimed' | 'expired', policy: string, count: number): void;
  /** Leases this process currently holds, after every change. */
  leasesHeld?(count: number): void;
  /**
   * A shadow (`mode: 'shadow'`) policy would have refused this admitted request; it was not
   * refused and the shadow buckets were not charged.
   */
  shadowRejected?(request: AdmissionRequest, rejection: Rejection): void;
  /** Called once by `createLimiter` with readers metrics poll when scraped (the overload inputs, the store). */
  attached?(gauges: LimiterGauges): void;
}

/**
 * What a limiter shows an observer to poll (see {@link LimiterObserver.attached}).
 *
 * @example
 * ```ts
 * const observer: LimiterObserver = { attached: (g) => setInterval(() => console.log(g.requestsInFlight()), 1000) };
 * ```
 */
export interface LimiterGauges {
  /** Requests this process holds in flight under overload policies (their leases, open responses). */
  requestsInFlight(): number;
  /** The event-loop delay overload policies see now, ms; undefined when no policy reads it. */
  eventLoopDelayMs(): number | undefined;
  /** The limiter's store (a `RedisStore` also has `stats()`). */
  readonly store: Store;
}

/**
 * Deduplication of retried messages (DESIGN §4).
 *
 * @example
 * ```ts
 * const dedup: DedupOptions = { ttlSeconds: 900, methods: ['SendMessage', 'SendStreamingMessage'] };
 * ```
 */
export interface DedupOptions {
  /** Methods deduplicated; default SendMessage and SendStreamingMessage. */
  readonly methods?: readonly A2AMethod[];
  /** How long (caller, messageId) → task is remembered, seconds; default 900. */
  readonly ttlSeconds?: number;
  /** How long a copy waits for the first copy's task id when it is still being created, ms; default 2,000. */
  readonly waitForTaskMs?: number;
  /**
   * Shared stores (`RedisStore`): how long the record of a message being admitted stays pending
   * without a renewal, seconds; default 5. The admitting process renews it every third of that
   * until the task id is recorded; a process that dies leaves a record that is orphaned after it.
   */
  readonly pendingTtlSeconds?: number;
  /**
   * Shared stores: finds the task a message started in the shared task store: its task id,
   * `undefined` when there is none, or `null` when it cannot tell (a copy is then told to come
   * back instead of running). Asked when a record is orphaned (its owner stopped renewing it
   * before recording a task) and when the store cannot be reached. See `findTaskByMessageId`.
   */
  readonly findTask?: (request: AdmissionRequest) => Promise<string | undefined | null>;
  /**
   * Shared stores: what a message gets when the store cannot say whether it is a copy (outage,
   * timeout) and `findTask` does not find it: `reject` (default) answers a retryable 503
   * (`store-unavailable`, retry in 1 s), so a copy never runs twice; `run` admits it (a copy
   * admitted elsewhere before the outage may then run again).
   */
  readonly whenStoreUnavailable?: 'reject' | 'run';
}

/**
 * Options of {@link createLimiter}.
 *
 * @example
 * ```ts
 * const options: LimiterOptions = {
 *   policies: [{ name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage'], limit: 60, windowSeconds: 60, burst: 10 }],
 *   domain: 'agents.example.com',
 * };
 * ```
 */
export interface LimiterOptions {
  /** Policies; required unless `store` is given (a store brings its own). */
  readonly policies?: readonly Policy[];
  /** Where state lives; default a `MemoryStore` over `policies`. */
  readonly store?: Store;
  /** Time source for the default store and lease bookkeeping; default `Date.now`. */
  readonly clock?: Clock;
  /** ErrorInfo domain (yours, never `a2a-protocol.org`). Default: host of `card`'s first interface URL. */
  readonly domain?: string;
  /** The agent card, for the default domain. */
  readonly card?: AgentCardLike;
  /** Hold options for the default store. */
  readonly holds?: HoldOptions;
  /**
   * Overload signal: event-loop delay fed into overload policies with `maxEventLoopDelayMs`.
   * Default: sampled with `perf_hooks.monitorEventLoopDelay` when such a policy exists. A function
   * replaces the monitor (ms); `false` disables it.
   */
  readonly eventLoopDelay?: false | EventLoopMonitorOptions | (() => number);
  /** Deduplication by (caller, messageId); on by default; `false` turns it off. */
  readonly dedup?: false | DedupOptions;
  /** Lease lifetimes. */
  readonly leases?: {
    /** Per policy name: hold its leases until the task ends or the response ends. Default `task` for SendMessage / SendStreamingMessage, `response` for other methods. */
    readonly holdUntil?: Readonly<Record<string, LeaseHoldUntil>>;
    /** Release a task's leases when it enters INPUT_REQUIRED / AUTH_REQUIRED; default true. */
    readonly releaseOnInterrupted?: boolean;
    /** How often live leases are renewed, ms; default a third of the shortest lease TTL. */
    readonly renewEveryMs?: number;
  };
  /** Outcome observer (metrics). */
  readonly observer?: LimiterObserver;
  /**
   * The caller's tier, for tiered rate policies: a function of the identified request (its
   * `caller` is the authenticated user's key, as the adapter's `identify` made it). Never read a
   * header the caller sets here. Undefined, or a tier a policy does not list: its `defaultTier`.
   * A request that already carries `tier` keeps it.
   */
  readonly tierOf?: (request: RequestIdentity) => string | undefined;
  /**
   * Where the line of a shadow policy's would-be refusal goes (at most one per policy per
   * second); default `console.warn`; `false`: no lines (the observer still counts each).
   */
  readonly shadowLog?: false | ((line: string) => void);
}

/**
 * What the limiter made of a request.
 * - `admitted`: go on; `ticket.headers` are the `RateLimit` headers for the response; call
 *   `ticket.end()` when the response ends.
 * - `rejected`: write the rejection (nothing was created or started).
 * - `duplicate`: a copy of an already admitted message; answer with task `taskId` (undefined when
 *   the first copy produced no task), do not run it.
 *
 * @example
 * ```ts
 * const outcome = await limiter.admit({ caller: 'a', method: 'GetTask', binding: 'rest' });
 * if (outcome.status === 'rejected') console.log(outcome.rejection.retryAfterMs);
 * ```
 */
export type AdmissionOutcome =
  | { readonly status: 'admitted'; readonly ticket: AdmissionTicket }
  | {
      readonly status: 'rejected';
      readonly rejection: Rejection;
      readonly limits: readonly LimitState[];
    }
  | { readonly status: 'duplicate'; readonly taskId: string | undefined };

/**
 * Metadata / header key carrying an admission's ticket id from the adapter (which always sets or
 * clears it) to the SDK's request handler, where {@link Limiter.trackTasks} reads it from
 * `ServerCallContext.state.get('headers')` to tie leases and dedup entries to the task.
 *
 * @example
 * ```ts
 * req.headers[TICKET_HEADER]; // 't1f'
 * ```
 */
export const TICKET_HEADER = 'x-a2a-ratelimit-ticket';

/** How soon a copy of a message still in progress is told to come back, ms. */
const IN_PROGRESS_RETRY_MS = 1000;
/**
 * Policy name of the 503 a message gets when a shared store cannot say whether it is a copy.
 *
 * @example
 * ```ts
 * if (rejection.policy === DEDUP_UNAVAILABLE_POLICY) console.log('deduplication store down');
 * ```
 */
export const DEDUP_UNAVAILABLE_POLICY = 'store-unavailable';

/** Dedup entries that are not task ids. */
const MARK = {
  /** Nothing ran (rejected, or ended before the executor started): a copy may run. */
  retryable: '\u0000retryable',
  /** The executor ran and answered with a message: no task to return. */
  noTask: '\u0000no-task',
  /** Admitted, task not created yet. */
  pending: '\u0000pending',
} as const;

/**
 * An admitted request: its leases and `RateLimit` headers. The adapter calls {@link end} when the
 * response ends for any reason; task leases bound to a task by {@link Limiter.trackTasks} outlive it.
 *
 * @example
 * ```ts
 * res.on('close', () => ticket.end());
 * ```
 */
export interface AdmissionTicket {
  /** Unique id, carried in {@link TICKET_HEADER}. */
  readonly id: string;
  readonly request: AdmissionRequest;
  /** Rate states after this request was charged. */
  readonly limits: readonly LimitState[];
  /** `ratelimit-policy` / `ratelimit` headers for the response (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  /** True when admitted by claiming a held slot. */
  readonly claimedHold: boolean;
  /**
   * False when the ticket holds nothing (no lease, no deduplication outcome to record): then an
   * adapter need not call {@link AdmissionTicket.end} nor hand the ticket to the SDK.
   */
  readonly needsEnd: boolean;
  /** Ends the response: releases response leases, and task leases not bound to a task. Idempotent. */
  end(): void;
}

/**
 * The limiter: identity in, one decision out, encoded per binding.
 *
 * @example
 * ```ts
 * const limiter = createLimiter({ policies, card });
 * const outcome = await limiter.admit({ caller: 'a', method: 'SendMessage', messageId: 'm', binding: 'jsonrpc' });
 * ```
 */
export interface Limiter {
  readonly policySet: CompiledPolicySet;
  readonly store: Store;
  readonly clock: Clock;
  /** ErrorInfo domain of every rejection. */
  readonly domain: string;
  /** Methods deduplicated by messageId (empty when off). */
  readonly dedupMethods: ReadonlySet<A2AMethod>;
  /** Decides one request. Synchronous for a `MemoryStore` unless deduplication needs the store. */
  admit(request: AdmissionRequest): AdmissionOutcome | Promise<AdmissionOutcome>;
  /**
   * The tier a request is decided under: its own `tier`, else `tierOf(request)`; undefined when
   * neither says (tiered policies then apply their `defaultTier`).
   */
  tierOf(request: RequestIdentity): string | undefined;
  /**
   * Charges `units` (a positive integer) of real usage — e.g. the model tokens a task burned —
   * to every usage policy (`unit` set) that applies to `request` (the identity the task was
   * admitted with: caller, method, tenant; its tier is resolved as at admission). The budget may
   * go into debt; the caller's next admission then waits exactly until it is positive again.
   * Usage is charged to the store, so it counts after the task ended and whether or not the
   * caller is still connected.
   */
  reportUsage(request: RequestIdentity, units: number): Promise<void>;
  /** A task's usage reporter (task id or `RequestContext`), charging whoever started it: `server/task-usage.ts`. */
  usageOf(task: string | TaskRef): TaskUsageReporter;
  /**
   * Decides the resubscription a copy of a still-running streamed message becomes (after
   * {@link admit} answered `duplicate`): a stream like any other, decided under the policies of
   * SubscribeToTask and the stream limits of SendStreamingMessage (its overload policies, and
   * concurrency policies whose leases are held until the response ends), never charged a rate
   * of SendStreamingMessage again. The ticket's leases end with the response.
   */
  admitResubscription(request: AdmissionRequest): AdmissionOutcome | Promise<AdmissionOutcome>;
  /** REST wire form of a rejection. */
  encodeRest(rejection: Rejection, limits?: readonly LimitState[]): HttpRejectionResponse;
  /** JSON-RPC wire form of a rejection. */
  encodeJsonRpc(
    rejection: Rejection,
    id: string | number | null,
    limits?: readonly LimitState[],
    mirrorHttpStatus?: boolean,
  ): HttpRejectionResponse;
  /** gRPC wire form of a rejection. */
  encodeGrpc(rejection: Rejection, limits?: readonly LimitState[]): GrpcRejectionStatus;
  /**
   * Wraps the SDK's `ExecutionEventBusManager` (pass it as the 4th `DefaultRequestHandler`
   * argument) so task leases last until the task's terminal state and retried messages map to
   * their task. Without it, task leases end with the response. The wrapper hands the SDK a
   * pass-through bus and watches what is published on it; a custom manager works as long as the
   * bus it creates is the one events are published on and finished.
   */
  trackTasks<M extends EventBusManagerLike>(inner: M): M;
  /** Leases this process currently holds (open responses and live tasks). */
  leasesHeld(): number;
  /** Tasks whose leases are currently held. */
  tasksTracked(): number;
  /** Stops timers and closes the store. */
  close(): Promise<void>;
}

const systemClock: Clock = { nowMs: () => Date.now() };

/** The lease list of a ticket that has none (shared; frozen, so never pushed to by mistake). */
const NO_LEASES = Object.freeze([]) as unknown as LeaseRef[];

/** This process in ticket ids (tickets are process-local). */
const PID36 = process.pid.toString(36);

/** Tracks holds this process has seen made, to count made / claimed / expired (DESIGN §8). */
class HoldLedger {
  /** Open holds by `caller \0 messageId` (a request holds in at most a few policies). */
  private readonly open = new Map<string, { policy: string; expiresMs: number }[]>();
  private count = 0;

  constructor(
    private readonly observer: LimiterObserver | undefined,
    private readonly graceMs: (delayMs: number) => number,
  ) {}

  rejected(request: AdmissionRequest, rejection: Rejection, nowMs: number): void {
    if (rejection.reserved !== true || request.messageId === undefined) return;
    const key = `${request.caller}\u0000${request.messageId}`;
    const list = this.open.get(key);
    if (list?.some((h) => h.policy === rejection.policy)) return;
    if (this.count >= 100_000) this.sweep(nowMs, true);
    const hold = {
      policy: rejection.policy,
      expiresMs: nowMs + rejection.retryAfterMs + this.graceMs(rejection.retryAfterMs),
    };
    if (list === undefined) this.open.set(key, [hold]);
    else list.push(hold);
    this.count++;
    this.observer?.holds?.('made', rejection.policy, 1);
  }

  admitted(request: AdmissionRequest, admission: Admission): void {
    if (admission.claimedHold && request.messageId !== undefined) {
      const key = `${request.caller}\u0000${request.messageId}`;
      const list = this.open.get(key);
      const hold = list?.shift();
      if (hold !== undefined) {
        this.count--;
        if (list?.length === 0) this.open.delete(key);
        this.observer?.holds?.('claimed', hold.policy, 1);
      }
    }
  }

  /** Counts expired holds (all of them when `force`, to bound memory) and forgets them. */
  sweep(nowMs: number, force: boolean): void {
    for (const [key, list] of this.open) {
      const kept = force ? [] : list.filter((h) => h.expiresMs >= nowMs);
      for (const hold of list) {
        if (!kept.includes(hold)) this.observer?.holds?.('expired', hold.policy, 1);
      }
      this.count -= list.length - kept.length;
      if (kept.length === 0) this.open.delete(key);
      else this.open.set(key, kept);
      if (force && this.count < 90_000) return;
    }
  }
}

/**
 * Creates the limiter shared by all adapters. Policies are validated here (a `PolicyError` names
 * the bad policy and field); the domain is resolved once (`domain`, else the host of the card's
 * first interface URL; never `a2a-protocol.org`).
 *
 * @example
 * ```ts
 * import { createLimiter } from 'a2a-ratelimit/server';
 * const limiter = createLimiter({
 *   card,
 *   policies: [
 *     { name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage', 'SendStreamingMessage'], limit: 60, windowSeconds: 60, burst: 10 },
 *     { name: 'tasks-per-caller', kind: 'concurrency', scope: 'caller', methods: ['SendMessage', 'SendStreamingMessage'], max: 5 },
 *     { name: 'agent-overload', kind: 'overload', maxInFlight: 500, maxEventLoopDelayMs: 250 },
 *   ],
 * });
 * const requestHandler = new DefaultRequestHandler(card, taskStore, executor, limiter.trackTasks(new DefaultExecutionEventBusManager()));
 * ```
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const clock = options.clock ?? systemClock;
  let store: Store;
  if (options.store !== undefined) {
    store = options.store;
  } else {
    if (options.policies === undefined) {
      throw new TypeError('createLimiter: pass `policies` (or a `store` that has them)');
    }
    store = new MemoryStore({
      policies: options.policies,
      clock,
      ...(options.holds === undefined ? {} : { holds: options.holds }),
    });
  }
  const memory = store instanceof MemoryStore ? store : undefined;
  const policySet = store.policySet;
  const domain = resolveOperatorDomain({ domain: options.domain, card: options.card });
  const observer = options.observer;

  // Event-loop delay: only when an overload policy asks for it.
  const wantsLag = policySet.policies.some(
    (p) => p.kind === 'overload' && Number.isFinite(p.maxEventLoopDelayMs),
  );
  let lagSource: EventLoopDelaySource | undefined;
  let lag: (() => number) | undefined;
  if (wantsLag && options.eventLoopDelay !== false) {
    if (typeof options.eventLoopDelay === 'function') lag = options.eventLoopDelay;
    else {
      lagSource = monitorEventLoop(options.eventLoopDelay ?? {});
      lag = () => (lagSource as EventLoopDelaySource).delayMs();
    }
  }

  // Deduplication.
  const dedupOptions = options.dedup === false ? undefined : (options.dedup ?? {});
  const dedupMethods: ReadonlySet<A2AMethod> = new Set(
    dedupOptions === undefined ? [] : (dedupOptions.methods ?? [...MESSAGE_METHODS]),
  );
  const dedupTtlMs = (dedupOptions?.ttlSeconds ?? 900) * 1000;
  if (!(dedupTtlMs > 0 && Number.isFinite(dedupTtlMs))) {
    throw new RangeError(
      `createLimiter: dedup.ttlSeconds must be a positive number, got ${dedupOptions?.ttlSeconds}`,
    );
  }
  const waitForTaskMs = dedupOptions?.waitForTaskMs ?? 2000;
  const findTask = dedupOptions?.findTask;
  const runUnchecked = dedupOptions?.whenStoreUnavailable === 'run';
  if (
    dedupOptions?.whenStoreUnavailable !== undefined &&
    dedupOptions.whenStoreUnavailable !== 'reject' &&
    !runUnchecked
  ) {
    throw new RangeError(
      `createLimiter: dedup.whenStoreUnavailable must be 'reject' or 'run', got ${String(dedupOptions.whenStoreUnavailable)}`,
    );
  }
  /** Shared stores: this process's pending records (the in-process store keeps its own). */
  const shared =
    memory !== undefined || dedupOptions === undefined
      ? undefined
      : new PendingMessages({
          store,
          ttlMs: dedupTtlMs,
          pendingTtlMs: (dedupOptions.pendingTtlSeconds ?? 5) * 1000,
          maxLocalRecords: 100_000,
        });
  /** Local waiters for a first copy's outcome (task id or mark): caller \0 messageId → resolvers. */
  const waiters = new Map<string, ((taskId: string | undefined) => void)[]>();

  // Lease lifetimes.
  const holdUntil = options.leases?.holdUntil ?? {};
  for (const name of Object.keys(holdUntil)) {
    if (!policySet.policies.some((p) => p.name === name)) {
      throw new RangeError(`createLimiter: leases.holdUntil names unknown policy "${name}"`);
    }
  }
  const policyHoldUntil = policySet.policies.map(
    (p) => holdUntil[p.name] ?? (p.kind === 'concurrency' ? p.holdUntil : undefined),
  );
  /**
   * Concurrency leases of messages last as long as their task; overload counts requests in
   * flight, so its leases (and those of other methods) end with the response.
   */
  const defaultHoldUntil = (lease: LeaseRef, request: AdmissionRequest): LeaseHoldUntil =>
    policySet.policies[lease.policyIndex]?.kind === 'concurrency' &&
    MESSAGE_METHODS.has(request.method)
      ? 'task'
      : 'response';
  /**
   * Policies a resubscription made of a duplicate stream is decided under (see
   * `admitResubscription`): SubscribeToTask's, and SendStreamingMessage's leases that last as long
   * as the stream.
   */
  const resubscriptionPolicyIndexes = policySet.policies
    .filter(
      (p) =>
        (!p.shadow && p.methods.has('SubscribeToTask')) ||
        (!p.shadow &&
          p.methods.has('SendStreamingMessage') &&
          p.kind !== 'rate' &&
          (policyHoldUntil[p.index] ?? (p.kind === 'concurrency' ? 'task' : 'response')) ===
            'response'),
    )
    .map((p) => p.index);
  const ttls = policySet.policies.map((p) =>
    p.kind === 'rate' ? Number.POSITIVE_INFINITY : p.leaseTtlMs,
  );
  const renewEveryMs =
    options.leases?.renewEveryMs ?? Math.max(1000, Math.floor(Math.min(...ttls, 600_000) / 3));

  // Hold bookkeeping exists only for the metrics that count holds made / claimed / expired.
  const holdLedger =
    observer?.holds === undefined
      ? undefined
      : new HoldLedger(observer, (delayMs) => {
          const h = policySet.holds;
          return Math.max(h.minGraceUs / 1000, delayMs * h.graceFraction);
        });
  const holdSweep =
    holdLedger === undefined
      ? undefined
      : setInterval(() => holdLedger.sweep(clock.nowMs(), false), 1000);
  holdSweep?.unref();

  let leaseCount = 0;
  /** Leases of overload policies held (the requests in flight they count), for metrics. */
  let overloadLeaseCount = 0;
  const overloadLeases = (leases: readonly LeaseRef[]): number =>
    leases.filter((l) => policySet.policies[l.policyIndex]?.kind === 'overload').length;
  const leaseDelta = (delta: number): void => {
    if (delta === 0) return;
    leaseCount += delta;
    observer?.leasesHeld?.(leaseCount);
  };
  const releaseLeases = (leases: readonly LeaseRef[]): void => {
    if (leases.length === 0) return;
    leaseDelta(-leases.length);
    overloadLeaseCount -= overloadLeases(leases);
    if (memory !== undefined) memory.releaseSync(leases);
    else void store.release(leases).catch(() => undefined);
  };

  const tracker = new TaskLeaseTracker(
    {
      releaseOnInterrupted: options.leases?.releaseOnInterrupted ?? true,
      release: releaseLeases,
      ticketOf: (id) => tickets.get(id),
      nowMs: () => clock.nowMs(),
    },
    TICKET_HEADER,
  );

  /** Whether `trackTasks` wrapped the SDK's event-bus manager (task-level leases and dedup). */
  let tracking = false;
  /** Open tickets by id (until their response ends). */
  const tickets = new Map<string, Ticket>();
  const usage = new TaskUsageBook({
    ticketHeader: TICKET_HEADER,
    admittedBy: (id) => tickets.get(id)?.request,
    charge: (request, units) => limiter.reportUsage(request, units),
    nowMs: () => clock.nowMs(),
  });
  let ticketCounter = 0;

  /**
   * Records the outcome of a deduplicated message (`key`: its `messageRecordKey`) and wakes the
   * copies waiting for it. Store errors are ignored (a missing record means "run it").
   */
  const recordTask = (request: AdmissionRequest, key: string, value: string): void => {
    const messageId = request.messageId;
    if (messageId === undefined || !dedupMethods.has(request.method)) return;
    if (waiters.size > 0) {
      const list = waiters.get(key);
      if (list !== undefined) {
        waiters.delete(key);
        for (const resolve of list) resolve(value);
      }
    }
    if (memory !== undefined) {
      // "Nothing ran" needs no record: a missing record already means "run it".
      if (value === MARK.retryable) memory.forgetMessageKeySync(key);
      else memory.recordMessageTaskKeySync(key, value, dedupTtlMs);
      return;
    }
    if (shared === undefined) return;
    if (value === MARK.retryable) shared.release(request.caller, messageId, key);
    else shared.settle(request.caller, messageId, key, value);
  };

  class Ticket implements AdmissionTicket {
    /** Set when the ticket needs ending (it is then looked up by id); see {@link Ticket.id}. */
    private ticketId: string | undefined;
    readonly limits: readonly LimitState[];
    readonly headers: Readonly<Record<string, string>>;
    readonly claimedHold: boolean;
    readonly needsEnd: boolean;
    /** Leases held until the response ends. */
    responseLeases: LeaseRef[] = NO_LEASES;
    /** Leases held until the task ends (moved to the tracker when bound). */
    taskLeases: LeaseRef[] = NO_LEASES;
    /** Bound to a task (or a message reply) by the event-bus wrapper. */
    bound = false;
    ended = false;
    /** Dedup entry still to be written when the outcome is known. */
    dedupPending: boolean;

    /** @param dedupKey `messageRecordKey` of a deduplicated message, else undefined. */
    constructor(
      readonly request: AdmissionRequest,
      admission: Admission,
      private readonly dedupKey: string | undefined,
    ) {
      this.limits = admission.limits;
      this.headers = admission.limits.length > 0 ? rateLimitHeaders(admission.limits) : {};
      this.claimedHold = admission.claimedHold;
      this.dedupPending = dedupKey !== undefined;
      if (dedupKey !== undefined) {
        // The in-process store records only admitted messages (a pending record: no task yet).
        if (memory !== undefined) memory.rememberMessageKeySync(dedupKey, dedupTtlMs);
        else shared?.admitted(dedupKey);
      }
      const leases = admission.leases;
      if (leases.length > 0) {
        this.responseLeases = [];
        this.taskLeases = [];
        for (const lease of leases) {
          const until = policyHoldUntil[lease.policyIndex] ?? defaultHoldUntil(lease, request);
          (until === 'task' ? this.taskLeases : this.responseLeases).push(lease);
        }
        leaseDelta(leases.length);
        overloadLeaseCount += overloadLeases(leases);
      }
      this.needsEnd = this.dedupPending || leases.length > 0 || this.limits.some((l) => l.unit); // usage: found by task
    }

    /** Unique id (made on first use: a ticket that holds nothing is never looked up). */
    get id(): string {
      if (this.ticketId === undefined) {
        ticketCounter += 1;
        this.ticketId = `t${ticketCounter.toString(36)}.${PID36}`;
      }
      return this.ticketId;
    }

    /**
     * Whether the SDK may start the executor: false when this process no longer owns the
     * message's pending record in a shared store (it lapsed unrenewed, so a copy elsewhere may
     * have taken it over and run).
     */
    mayStart(): boolean {
      return this.dedupKey === undefined || shared === undefined || shared.mayStart(this.dedupKey);
    }

    /** Called by the tracker when the SDK created the task's event bus. */
    takeTaskLeases(): LeaseRef[] {
      this.bound = true;
      const leases = this.taskLeases;
      this.taskLeases = NO_LEASES;
      return leases;
    }

    /** Called by the tracker once the first event shows whether a task exists. */
    settleDedup(taskId: string | undefined): void {
      if (!this.dedupPending) return;
      this.dedupPending = false;
      recordTask(this.request, this.dedupKey as string, taskId ?? MARK.noTask);
    }

    end(): void {
      if (this.ended) return;
      this.ended = true;
      if (this.ticketId !== undefined) tickets.delete(this.ticketId);
      releaseLeases(this.responseLeases);
      this.responseLeases = NO_LEASES;
      if (!this.bound) {
        releaseLeases(this.taskLeases);
        this.taskLeases = NO_LEASES;
        // With task tracking, an unbound ticket ended before the SDK started the executor:
        // nothing ran, a copy may run. Without it we cannot tell, so a copy never runs again.
        if (this.dedupPending) {
          this.dedupPending = false;
          recordTask(
            this.request,
            this.dedupKey as string,
            tracking ? MARK.retryable : MARK.noTask,
          );
        }
      }
    }

    liveLeases(): LeaseRef[] {
      return this.bound ? this.responseLeases : [...this.responseLeases, ...this.taskLeases];
    }
  }

  // Renewal of live leases (open responses and tracked tasks).
  const maxTtlMs = Math.max(
    0,
    ...policySet.policies.map((p) => (p.kind === 'rate' ? 0 : p.leaseTtlMs)),
  );
  const renewTimer = setInterval(() => {
    tracker.sweepInterrupted(clock.nowMs(), maxTtlMs);
    const live: LeaseRef[] = [];
    for (const t of tickets.values()) live.push(...t.liveLeases());
    live.push(...tracker.liveLeases());
    if (live.length === 0) return;
    if (memory !== undefined) memory.renewSync(live);
    else void store.renew(live).catch(() => undefined);
  }, renewEveryMs);
  renewTimer.unref();

  /** `dedupKey`: `messageRecordKey` of a deduplicated message, else undefined. */
  const finish = (
    request: AdmissionRequest,
    decision: Decision,
    dedupKey: string | undefined,
  ): AdmissionOutcome => {
    if (decision.admitted) {
      holdLedger?.admitted(request, decision);
      observer?.admitted?.(request, decision);
      const ticket = new Ticket(request, decision, dedupKey);
      if (ticket.needsEnd) tickets.set(ticket.id, ticket);
      return { status: 'admitted', ticket };
    }
    holdLedger?.rejected(request, decision.rejection, clock.nowMs());
    observer?.rejected?.(request, decision.rejection);
    // A rejected message ran nothing: the in-process store never recorded it.
    if (dedupKey !== undefined && memory === undefined) {
      recordTask(request, dedupKey, MARK.retryable);
    }
    return { status: 'rejected', rejection: decision.rejection, limits: decision.limits };
  };

  const inputOf = (request: AdmissionRequest): DecisionInput => {
    const delayMs = lag?.();
    return delayMs === undefined ? request : { ...request, eventLoopDelayMs: delayMs };
  };

  // Shadow policies: decided apart, only for requests the enforced ones admitted, without a
  // messageId (a dry run holds no slot), all-or-nothing among themselves; never refusing.
  const shadowLog =
    options.shadowLog === false
      ? undefined
      : new ShadowLog(options.shadowLog ?? ((line) => console.warn(line)));
  const shadowInputOf = (input: DecisionInput): DecisionInput | undefined => {
    if (input.policyIndexes !== undefined) return undefined;
    const policyIndexes = policySet.shadowIndexes(input.method);
    if (policyIndexes.length === 0) return undefined;
    return {
      caller: input.caller,
      method: input.method,
      tenant: input.tenant,
      skill: input.skill,
      tier: input.tier,
      eventLoopDelayMs: input.eventLoopDelayMs,
      policyIndexes,
    };
  };
  const withShadow = (
    request: AdmissionRequest,
    decision: Decision,
    shadow: Decision,
  ): Decision => {
    if (!shadow.admitted) {
      observer?.shadowRejected?.(request, shadow.rejection);
      shadowLog?.refused(shadow.rejection, clock.nowMs());
      return decision;
    }
    if (!decision.admitted || shadow.leases.length === 0) return decision;
    return { ...decision, leases: [...decision.leases, ...shadow.leases] };
  };

  const decideNow = (
    request: AdmissionRequest,
    dedupKey: string | undefined,
  ): AdmissionOutcome | Promise<AdmissionOutcome> => {
    const input = inputOf(request);
    if (memory !== undefined) {
      const decision = memory.decideSync(input);
      const shadowInput = decision.admitted ? shadowInputOf(input) : undefined;
      if (shadowInput === undefined) return finish(request, decision, dedupKey);
      return finish(
        request,
        withShadow(request, decision, memory.decideSync(shadowInput)),
        dedupKey,
      );
    }
    return store.decide(input).then(
      (decision) => {
        const shadowInput = decision.admitted ? shadowInputOf(input) : undefined;
        if (shadowInput === undefined) return finish(request, decision, dedupKey);
        return store.decide(shadowInput).then(
          (shadow) => finish(request, withShadow(request, decision, shadow), dedupKey),
          // A dry run never turns an admission into a failure.
          () => finish(request, decision, dedupKey),
        );
      },
      (error: unknown) => {
        // Nothing ran: the message's pending record must not outlive the failed decision.
        if (dedupKey !== undefined) recordTask(request, dedupKey, MARK.retryable);
        throw error;
      },
    );
  };

  const waitForTask = (key: string): Promise<string | undefined> =>
    new Promise((resolve) => {
      const list = waiters.get(key) ?? [];
      let done = false;
      const timer = setTimeout(() => {
        done = true;
        resolve(undefined);
      }, waitForTaskMs);
      timer.unref();
      list.push((taskId) => {
        if (done) return;
        clearTimeout(timer);
        resolve(taskId);
      });
      waiters.set(key, list);
    });

  const duplicate = (request: AdmissionRequest, taskId: string | undefined): AdmissionOutcome => {
    observer?.deduplicated?.(request);
    return { status: 'duplicate', taskId };
  };

  /**
   * A copy of a message this caller sent before (within the dedup TTL): its task, "processed
   * without a task", or — while the first copy's outcome is not known yet — a retryable 503
   * `MESSAGE_IN_PROGRESS` (never "already processed" for a call that may still fail or run).
   */
  const admitSeen = async (
    request: AdmissionRequest,
    messageId: string,
    key: string,
    seen: MessageRecord,
  ): Promise<AdmissionOutcome> => {
    let value = seen.fresh ? undefined : seen.taskId;
    // The first copy is still in flight in this process: wait (bounded) for its outcome. (The
    // in-process store holds records of this process's admitted messages only.)
    const pendingHere = memory !== undefined ? value === undefined : shared?.isPendingHere(key);
    if ((value === undefined || value === MARK.pending) && pendingHere) {
      value = await waitForTask(key);
    }
    if (value === MARK.noTask) return duplicate(request, undefined);
    if (value !== undefined && !value.startsWith('\u0000')) return duplicate(request, value);
    return inProgress(request, messageId);
  };

  /** The answer to a copy whose first copy's outcome is not known yet: retry in 1 s. */
  const inProgress = (request: AdmissionRequest, messageId: string): AdmissionOutcome => {
    observer?.deduplicated?.(request);
    const rejection: Rejection = {
      kind: 'overload',
      reason: REASONS.inProgress,
      retryAfterMs: IN_PROGRESS_RETRY_MS,
      policy: 'deduplication',
      scope: 'caller',
      subject: `caller:${request.caller}`,
      method: request.method,
      message: `A copy of message ${messageId} is still being processed; retry in ${IN_PROGRESS_RETRY_MS / 1000} s for its task`,
    };
    return { status: 'rejected', rejection, limits: [] };
  };

  /** The lookup in the shared task store: a task id, undefined (none), or null (lookup failed). */
  const lookUp = async (request: AdmissionRequest): Promise<string | undefined | null> => {
    if (findTask === undefined) return undefined;
    try {
      return await findTask(request);
    } catch {
      return null;
    }
  };

  /**
   * A shared store's answer to a message: decide it (fresh: this process owns its pending
   * record), answer it as a copy, or — orphaned or unreachable — look for its task in the shared
   * task store first.
   */
  const admitShared = async (
    request: AdmissionRequest,
    messageId: string,
    key: string,
    seen: MessageRecord,
    tookOver: boolean,
  ): Promise<AdmissionOutcome> => {
    if (seen.fresh) return decideNow(request, key);
    if (seen.unavailable === true) {
      const taskId = await lookUp(request);
      if (typeof taskId === 'string') return duplicate(request, taskId);
      if (runUnchecked) return decideNow(request, key);
      return unverifiable(request, messageId);
    }
    if (seen.orphaned === true) {
      // Its owner stopped renewing it before a task id was recorded: the message never started
      // (the owner does not start it once the record lapsed), or started and saved its task.
      const taskId = await lookUp(request);
      if (taskId === null || tookOver) return inProgress(request, messageId);
      if (taskId !== undefined) {
        (shared as PendingMessages).settle(request.caller, messageId, key, taskId);
        return duplicate(request, taskId);
      }
      const again = await (shared as PendingMessages).remember(
        request.caller,
        messageId,
        key,
        true,
      );
      return admitShared(request, messageId, key, again, true);
    }
    return admitSeen(request, messageId, key, seen);
  };

  /** The answer to a message whose store cannot say whether it is a copy: retry in 1 s. */
  const unverifiable = (request: AdmissionRequest, messageId: string): AdmissionOutcome => {
    const rejection: Rejection = {
      kind: 'overload',
      retryAfterMs: IN_PROGRESS_RETRY_MS,
      policy: DEDUP_UNAVAILABLE_POLICY,
      scope: 'agent',
      subject: 'agent',
      method: request.method,
      message: `Cannot check whether message ${messageId} was already received (the deduplication store is unavailable); retry in ${IN_PROGRESS_RETRY_MS / 1000} s — it will not run twice`,
    };
    observer?.rejected?.(request, rejection);
    return { status: 'rejected', rejection, limits: [] };
  };

  const tierOf = options.tierOf;
  const withTier = <R extends AdmissionRequest>(request: R): R => {
    if (tierOf === undefined || request.tier !== undefined) return request;
    const tier = tierOf(request);
    return tier === undefined ? request : { ...request, tier };
  };

  const limiter: Limiter = {
    policySet,
    store,
    clock,
    domain,
    dedupMethods,
    tierOf: (request) => request.tier ?? tierOf?.(request),
    reportUsage(request, units) {
      if (!Number.isSafeInteger(units) || units < 0) {
        return Promise.reject(
          new RangeError(`reportUsage: units must be a whole number ≥ 0, got ${units}`),
        );
      }
      if (units === 0 || store.chargeUsage === undefined) return Promise.resolve();
      const tier = request.tier ?? tierOf?.(request);
      return store.chargeUsage(tier === undefined ? request : { ...request, tier }, units);
    },
    admit(raw) {
      const request = withTier(raw);
      const messageId = request.messageId;
      if (messageId === undefined || !dedupMethods.has(request.method)) {
        return decideNow(request, undefined);
      }
      // One key per message for every table it touches (records, pending, waiters).
      const key = messageRecordKey(request.caller, messageId);
      if (memory !== undefined) {
        // In-process store: a fresh message (the common case) is decided synchronously, and
        // recorded only once admitted (the ticket does it): check, decide and record are one
        // synchronous step, so no other copy can slip in between.
        const seen = memory.peekMessageKeySync(key);
        return seen === undefined
          ? decideNow(request, key)
          : admitSeen(request, messageId, key, seen);
      }
      const pending = shared as PendingMessages;
      // A copy of a message this process admitted is answered from its own records.
      const here = pending.peekLocal(key);
      if (here !== undefined) return admitSeen(request, messageId, key, here);
      return pending
        .remember(request.caller, messageId, key)
        .then((seen) => admitShared(request, messageId, key, seen, false));
    },
    admitResubscription(request) {
      const resubscription: AdmissionRequest & Pick<DecisionInput, 'policyIndexes'> = {
        caller: request.caller,
        method: 'SubscribeToTask',
        binding: request.binding,
        tenant: request.tenant,
        skill: request.skill,
        tier: request.tier,
        policyIndexes: resubscriptionPolicyIndexes,
      };
      return decideNow(withTier(resubscription), undefined);
    },
    encodeRest: (rejection, limits) =>
      encodeRestRejection(rejection, limits === undefined ? { domain } : { domain, limits }),
    encodeJsonRpc: (rejection, id, limits, mirrorHttpStatus) =>
      encodeJsonRpcRejection(rejection, {
        domain,
        id,
        ...(limits === undefined ? {} : { limits }),
        ...(mirrorHttpStatus === undefined ? {} : { mirrorHttpStatus }),
      }),
    encodeGrpc: (rejection, limits) =>
      encodeGrpcRejection(rejection, limits === undefined ? { domain } : { domain, limits }),
    trackTasks: (inner) => {
      tracking = true;
      return usage.wrap(tracker.wrap(inner));
    },
    usageOf: (task) => usage.reporterOf(task),
    leasesHeld: () => leaseCount,
    tasksTracked: () => tracker.size(),
    async close() {
      clearInterval(renewTimer);
      clearInterval(holdSweep);
      lagSource?.close();
      shared?.close();
      await store.close();
    },
  };
  observer?.attached?.({
    requestsInFlight: () => overloadLeaseCount,
    eventLoopDelayMs: () => lag?.(),
    store,
  });
  return limiter;
}
