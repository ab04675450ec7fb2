/**
 * @module limiter-options
 * What `createLimiter` takes: request and observer shapes, the options, their frozen defaults and
 * their one check.
 */

import { type A2AMethod, MESSAGE_METHODS } from '../core/a2a-methods.js';
import type { Clock } from '../core/clock.js';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { HoldOptions, Policy, RequestIdentity } from '../core/policy.js';
import type { Admission, Rejection } from '../core/rejection.js';
import { positiveOption } from '../store/positive-option.js';
import type { Store } from '../store/store.js';
import type { AnswerLimits } from './answer-budget.js';
import type { EventLoopMonitorOptions } from './event-loop-monitor.js';
import type { AgentCardLike } from './operator-domain.js';

/**
 * The A2A binding a request arrived on.
 */
export type Binding = 'jsonrpc' | 'rest' | 'grpc';

/**
 * One request as an adapter identified it.
 */
export interface AdmissionRequest extends RequestIdentity {
  readonly binding: Binding;
}

/**
 * How long a concurrency lease taken at admission is held: until the task reaches a terminal
 * (or, by default, interrupted) state, or until the response ends (stream closed, client gone).
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
  /** The policies in force now (they change with `limiter.updatePolicies`). */
  policySet(): CompiledPolicySet;
  /** The version (content hash) of the policies in force now: `limiter.policySetVersion`. */
  policySetVersion(): string;
}

/**
 * Deduplication of retried messages (docs/architecture.md, "Deduplication and leases").
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
  /**
   * The Message a first copy was answered with (an executor that replies without a task) is kept
   * in its record, so a copy gets that Message again: each answer at most `maxBytes` (UTF-8 of
   * the stored form; default 16,384), the answers kept within the TTL at most `maxBytesPerCaller`
   * per caller (default 1 MiB) and `maxBytesTotal` in all (default 64 MiB), each counting 256
   * bytes more than its size. An answer past a bound is not kept: its copy is told the message
   * was processed without a task and is not run again (JSON-RPC `-32600`, REST 409 / gRPC
   * `ALREADY_EXISTS`). Per process: with replicas each bounds what it writes. `false`: none kept.
   * Needs `trackTasks` (it sees the answer).
   */
  readonly answers?: false | Partial<AnswerLimits>;
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
  /** Policies; required unless `store` is given (a store brings its own: then leave this out). */
  readonly policies?: readonly Policy[];
  /** Where state lives; default a `MemoryStore` over `policies`. */
  readonly store?: Store;
  /** Time source for the default store and lease bookkeeping; default `Date.now`. */
  readonly clock?: Clock;
  /** ErrorInfo domain (yours, never `a2a-protocol.org`). Default: host of `card`'s first interface URL. */
  readonly domain?: string;
  /** The agent card, for the default domain. */
  readonly card?: AgentCardLike;
  /** Hold options for the default store (a given `store` has its own: then leave this out). */
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
    /**
     * Per policy name: hold its leases until the task ends or the response ends. Default `task`
     * for SendMessage / SendStreamingMessage, `response` for other methods. A name the policies
     * do not have is an error at creation; one a later set (`updatePolicies`) drops is ignored.
     */
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
 * The limiter's defaults, in one place. Lease renewal defaults to a third of the shortest lease
 * TTL, clamped to [`minRenewEveryMs`, `maxRenewEveryMs`].
 *
 * @example
 * ```ts
 * DEFAULT_LIMITER_OPTIONS.dedup.ttlSeconds; // 900
 * ```
 */
export const DEFAULT_LIMITER_OPTIONS = Object.freeze({
  dedup: Object.freeze({
    methods: Object.freeze([...MESSAGE_METHODS]) as readonly A2AMethod[],
    ttlSeconds: 900,
    waitForTaskMs: 2_000,
    pendingTtlSeconds: 5,
    whenStoreUnavailable: 'reject' as 'reject' | 'run',
    /** Records this process keeps of its own messages over a shared store. */
    maxLocalRecords: 100_000,
    /** How soon a copy still in progress (or unverifiable) is told to come back, ms. */
    retryInProgressMs: 1_000,
    /** Bounds of the Message answers kept for copies (`dedup.answers`), bytes. */
    answers: Object.freeze({
      maxBytes: 16_384,
      maxBytesPerCaller: 1_048_576,
      maxBytesTotal: 67_108_864,
    }) as AnswerLimits,
  }),
  leases: Object.freeze({
    releaseOnInterrupted: true,
    minRenewEveryMs: 1_000,
    maxRenewEveryMs: 200_000,
  }),
  /** How often holds past their grace are counted as expired (metrics only), ms. */
  holdSweepEveryMs: 1_000,
});

/** Deduplication options with every default applied (`undefined` when deduplication is off). */
export interface ResolvedDedupOptions {
  readonly methods: ReadonlySet<A2AMethod>;
  readonly ttlMs: number;
  readonly waitForTaskMs: number;
  readonly pendingTtlMs: number;
  readonly runWhenStoreUnavailable: boolean;
  readonly findTask: DedupOptions['findTask'];
  /** Bounds of the Message answers kept; undefined: none kept. */
  readonly answers: AnswerLimits | undefined;
}

/**
 * Checks the options once, at creation: `store` together with `policies` or `holds` (which the
 * store already fixes and would be ignored) is a `TypeError`; neither `store` nor `policies` too;
 * a bad number is a `RangeError` naming the option. Returns the deduplication options resolved.
 *
 * @example
 * ```ts
 * resolveLimiterOptions({ store, policies }); // TypeError: pass policies or a store, not both
 * ```
 */
export function resolveLimiterOptions(options: LimiterOptions): ResolvedDedupOptions | undefined {
  if (options.store !== undefined) {
    for (const fixed of ['policies', 'holds'] as const) {
      if (options[fixed] !== undefined) {
        throw new TypeError(
          `createLimiter: \`${fixed}\` is ignored when a \`store\` is given (the store has its own); pass ${fixed} to the store, or leave out \`store\``,
        );
      }
    }
  } else if (options.policies === undefined) {
    throw new TypeError('createLimiter: pass `policies` (or a `store` that has them)');
  }
  const renewEveryMs = options.leases?.renewEveryMs;
  positiveOption('createLimiter: leases.renewEveryMs', renewEveryMs, 1);
  if (options.dedup === false) return undefined;
  const dedup = options.dedup ?? {};
  const defaults = DEFAULT_LIMITER_OPTIONS.dedup;
  const when = dedup.whenStoreUnavailable ?? defaults.whenStoreUnavailable;
  if (when !== 'reject' && when !== 'run') {
    throw new RangeError(
      `createLimiter: dedup.whenStoreUnavailable must be 'reject' or 'run', got ${String(when)}`,
    );
  }
  const seconds = (name: 'ttlSeconds' | 'pendingTtlSeconds'): number =>
    positiveOption(`createLimiter: dedup.${name}`, dedup[name], defaults[name]) * 1000;
  return {
    methods: new Set(dedup.methods ?? defaults.methods),
    ttlMs: seconds('ttlSeconds'),
    waitForTaskMs: dedup.waitForTaskMs ?? defaults.waitForTaskMs,
    pendingTtlMs: seconds('pendingTtlSeconds'),
    runWhenStoreUnavailable: when === 'run',
    findTask: dedup.findTask,
    answers: dedup.answers === false ? undefined : answerLimits(dedup.answers ?? {}),
  };
}

/** `dedup.answers` with its defaults; a bound that is not a positive integer is a `RangeError`. */
function answerLimits(given: Partial<AnswerLimits>): AnswerLimits {
  const defaults = DEFAULT_LIMITER_OPTIONS.dedup.answers;
  const bound = (name: keyof AnswerLimits): number =>
    positiveOption(`createLimiter: dedup.answers.${name}`, given[name], defaults[name], {
      integer: true,
    });
  return {
    maxBytes: bound('maxBytes'),
    maxBytesPerCaller: bound('maxBytesPerCaller'),
    maxBytesTotal: bound('maxBytesTotal'),
  };
}
