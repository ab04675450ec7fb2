/**
 * @module policy
 * The policy model as the operator writes it: request identity, scopes, the three policy kinds,
 * tier limits and hold options.
 */

import type { A2AMethod } from './a2a-methods.js';

/**
 * Who a request is, as the limiter sees it. Built by the server adapters from the authenticated
 * user and the request body; pure data.
 */
export interface RequestIdentity {
  /** Authenticated caller name, or the configured fallback key (e.g. `addr:127.0.0.1`). */
  readonly caller: string;
  /** The A2A 1.0 operation. */
  readonly method: A2AMethod;
  /** Tenant from the request (`params.tenant`, REST `/{tenant}/` prefix, gRPC `tenant`). */
  readonly tenant?: string | undefined;
  /** Skill the request targets, when the agent can tell. */
  readonly skill?: string | undefined;
  /** `message.messageId` of SendMessage / SendStreamingMessage; absent for other methods. */
  readonly messageId?: string | undefined;
  /**
   * The caller's tier (chooses the limits of tiered rate policies), resolved by the server from
   * the authenticated user (`createLimiter({ tierOf })`), never from a request header. Undefined,
   * or a tier a policy does not list: that policy's `defaultTier`.
   */
  readonly tier?: string | undefined;
}

/**
 * Every built-in scope, in documentation order.
 */
export const BUILTIN_SCOPES = [
  'caller',
  'tenant',
  'skill',
  'method',
  'agent',
  'caller+method',
  'caller+skill',
  'tenant+method',
] as const;

/**
 * Built-in scopes: whose bucket a request draws from. `caller+method` gives every caller one bucket
 * per method; `caller+skill` one per skill.
 */
export type BuiltinScope = (typeof BUILTIN_SCOPES)[number];

/**
 * A scope computed by your own function. Return `undefined` to let the policy not apply to that
 * request. `callerScoped: true` promises the key names one caller, which lets rejections reserve
 * slots; never set it for a key shared by several callers.
 *
 * @example
 * ```ts
 * const byRegion: CustomScope = { name: 'region', key: (r) => r.tenant?.split('-')[0], callerScoped: false };
 * ```
 */
export interface CustomScope {
  /** Scope label on the wire (ErrorInfo metadata `scope`), e.g. `region`. */
  readonly name: string;
  /** Key for the request, or `undefined` when the policy does not apply. */
  readonly key: (request: RequestIdentity) => string | undefined;
  /** True only if every key belongs to exactly one caller. */
  readonly callerScoped: boolean;
}

/**
 * A policy's scope: built-in or custom.
 */
export type PolicyScope = BuiltinScope | CustomScope;

/**
 * How a rejection by a policy is reported: `quota` (429 / RESOURCE_EXHAUSTED,
 * `RATE_LIMIT_EXCEEDED`) or `overload` (503 / UNAVAILABLE, `AGENT_OVERLOADED`).
 */
export type RejectionKind = 'quota' | 'overload';

/**
 * The limits of one tier of a rate policy.
 */
export interface RateTierLimits {
  /** Requests per window, a positive integer. */
  readonly limit: number;
  /** Window, whole seconds. */
  readonly windowSeconds: number;
  /** Bucket size, integer ≥ 1; default `limit`. */
  readonly burst?: number;
}

interface PolicyBase {
  /** Name on the wire (ErrorInfo `policy`, `RateLimit-Policy`), printable ASCII, ≤ 64 chars, unique. */
  readonly name: string;
  /** A2A methods the policy applies to; default: all. */
  readonly methods?: readonly A2AMethod[];
  /** Free text for the agent card. */
  readonly description?: string;
  /**
   * `enforce` (default) or `shadow`: a dry run. A shadow policy is decided and counted in a
   * bucket of its own for every request the enforced policies admit, and never refuses; what it
   * would have refused goes to the observer (metrics) and a log line. It is left off the card.
   */
  readonly mode?: 'enforce' | 'shadow';
  /**
   * Requests this policy does not apply to: caller names (e.g. `['health-checker']`), or a
   * predicate of the request (true = exempt). Other policies still apply to them.
   */
  readonly exempt?: readonly string[] | ((request: RequestIdentity) => boolean);
}

/**
 * `limit` requests per `windowSeconds` with `burst`, as GCRA (a token bucket with one timestamp
 * per key). Caller-scoped rate rejections of requests with a messageId reserve a slot.
 *
 * @example
 * ```ts
 * const perCaller: RatePolicy = {
 *   name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage'],
 *   limit: 60, windowSeconds: 60, burst: 10,
 * };
 * ```
 */
export interface RatePolicy extends PolicyBase {
  readonly kind: 'rate';
  /** Whose bucket; default `caller`. */
  readonly scope?: PolicyScope;
  /**
   * Requests per window, a positive integer (`q` of `RateLimit-Policy`). Required unless `tiers`
   * is given (then leave it out: the tiers say).
   */
  readonly limit?: number;
  /** Window length in whole seconds (`w` of `RateLimit-Policy`); required unless `tiers`. */
  readonly windowSeconds?: number;
  /** Requests allowed at once from a full bucket, integer ≥ 1; default `limit`. */
  readonly burst?: number;
  /** Default `quota`; set `overload` for an agent-wide protective rate. */
  readonly rejectAs?: RejectionKind;
  /**
   * Limits per caller tier (`{ free: { limit: 60, windowSeconds: 60, burst: 10 }, pro: … }`),
   * tier names `[a-z0-9][a-z0-9_-]{0,31}`. A caller keeps one bucket whatever its tier; the tier
   * chooses the limits it is measured by. Give `defaultTier` with it.
   */
  readonly tiers?: Readonly<Record<string, RateTierLimits>>;
  /** The tier of callers with no tier (or one `tiers` does not list); required with `tiers`. */
  readonly defaultTier?: string;
  /**
   * A usage budget instead of a request rate: `limit` / `burst` are in this unit (e.g.
   * `tokens`: `limit` tokens per window, a budget of `burst`). Admission refuses while the
   * budget is exhausted (charging `estimate` up front); `limiter.reportUsage` charges what a
   * task really used, possibly into debt. Name `[a-z][a-z0-9_-]{0,31}`.
   */
  readonly unit?: string;
  /** Usage policies: units charged at admission, integer 0 ≤ estimate ≤ burst; default 0. */
  readonly estimate?: number;
}

/**
 * At most `max` in flight per scope key: tasks until a terminal state, streams until closed.
 * Leases not renewed for `leaseTtlSeconds` are abandoned and freed.
 *
 * @example
 * ```ts
 * const tasks: ConcurrencyPolicy = { name: 'tasks-per-caller', kind: 'concurrency', max: 5 };
 * ```
 */
export interface ConcurrencyPolicy extends PolicyBase {
  readonly kind: 'concurrency';
  /** Whose slots; default `caller`. */
  readonly scope?: PolicyScope;
  /** Maximum in flight per key, positive integer. */
  readonly max: number;
  /** A lease not renewed for this long is freed; default 600 s. */
  readonly leaseTtlSeconds?: number;
  /** Hold-time estimate used until real hold times are observed; default 1,000 ms. */
  readonly initialHoldEstimateMs?: number;
  /**
   * How long a lease of a SendMessage / SendStreamingMessage is held: until its task ends
   * (`task`, the default: a limit on tasks) or until the response ends (`response`: a limit on
   * open streams). Other methods' leases always end with the response. The limiter's
   * `leases.holdUntil` overrides it.
   */
  readonly holdUntil?: 'task' | 'response';
  /** Default `quota`. */
  readonly rejectAs?: RejectionKind;
}

/**
 * Agent-wide protection: the agent failing for everyone answers 503 / UNAVAILABLE,
 * `AGENT_OVERLOADED`, scope `agent`. Give at least one of the two thresholds.
 *
 * @example
 * ```ts
 * const guard: OverloadPolicy = { name: 'agent-overload', kind: 'overload', maxInFlight: 500, maxEventLoopDelayMs: 200 };
 * ```
 */
export interface OverloadPolicy extends PolicyBase {
  readonly kind: 'overload';
  /** Requests in flight across the whole agent (per store) before rejecting. */
  readonly maxInFlight?: number;
  /**
   * Requests in flight one caller may hold of `maxInFlight` (its fair share), a positive integer,
   * or `false` for no share. Default: 10 % of `maxInFlight`, at least 10 (none when that is not
   * below `maxInFlight`). A caller over its share is refused alone, as quota (429 /
   * RESOURCE_EXHAUSTED, scope `caller`, ErrorInfo `signal` `callerShare`), while the agent keeps
   * serving everyone else: one caller's stuck responses cannot fill the agent-wide cap.
   */
  readonly maxInFlightPerCaller?: number | false;
  /**
   * Event-loop delay (ms, reported by the server layer) above which requests are rejected. The
   * default monitor smooths it (the median of the last 5 s of samples, nothing during the first
   * 10 s): a single stall, or a busy start-up, does not trip it (see `EventLoopMonitorOptions`).
   */
  readonly maxEventLoopDelayMs?: number;
  /** A lease not renewed for this long is freed; default 600 s. */
  readonly leaseTtlSeconds?: number;
  /** Hold-time estimate used until real hold times are observed; default 1,000 ms. */
  readonly initialHoldEstimateMs?: number;
}

/**
 * Any policy.
 */
export type Policy = RatePolicy | ConcurrencyPolicy | OverloadPolicy;

/**
 * Knobs of the reservation (hold) mechanism (`docs/architecture.md`, "The decision"). All optional.
 */
export interface HoldOptions {
  /** Unclaimed expirations after which a key stops making holds; default 3. */
  readonly maxNoShows?: number;
  /** Live holds per key at most; default 1,000. */
  readonly maxHoldsPerKey?: number;
  /** Smallest grace after a slot during which the retry may claim it; default 3,000 ms. */
  readonly minGraceMs?: number;
  /** Grace as a fraction of the delay when that is larger; default 0.1. */
  readonly graceFraction?: number;
}
