/**
 * @module policy
 * The policy model (rate, concurrency, overload; scopes; methods; quota vs overload) and its
 * compilation: validation with typed errors that name the policy and field, and the integer
 * microsecond GCRA parameters that the memory store, the Redis script and the simulation share.
 */

import { A2A_METHODS, type A2AMethod, ALL_A2A_METHODS, isA2AMethod } from './a2a-methods.js';
import {
  compileTierVariants,
  type RateTierLimits,
  rateParams,
  tierSelections,
  variantFor,
} from './policy-tiers.js';

/**
 * Who a request is, as the limiter sees it. Built by the server adapters from the authenticated
 * user and the request body; pure data.
 *
 * @example
 * ```ts
 * const id: RequestIdentity = { caller: 'orchestrator-7', method: 'SendMessage', messageId: 'm-1' };
 * ```
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
 * Built-in scopes: whose bucket a request draws from. `caller+method` gives every caller one bucket
 * per method; `caller+skill` one per skill.
 *
 * @example
 * ```ts
 * const scope: BuiltinScope = 'caller+method';
 * ```
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
 *
 * @example
 * ```ts
 * const scope: PolicyScope = 'tenant';
 * ```
 */
export type PolicyScope = BuiltinScope | CustomScope;

/**
 * How a rejection by a policy is reported: `quota` (429 / RESOURCE_EXHAUSTED,
 * `RATE_LIMIT_EXCEEDED`) or `overload` (503 / UNAVAILABLE, `AGENT_OVERLOADED`).
 *
 * @example
 * ```ts
 * const kind: RejectionKind = 'quota';
 * ```
 */
export type RejectionKind = 'quota' | 'overload';

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
  /** Event-loop delay (ms, reported by the server layer) above which requests are rejected. */
  readonly maxEventLoopDelayMs?: number;
  /** A lease not renewed for this long is freed; default 600 s. */
  readonly leaseTtlSeconds?: number;
  /** Hold-time estimate used until real hold times are observed; default 1,000 ms. */
  readonly initialHoldEstimateMs?: number;
}

/**
 * Any policy.
 *
 * @example
 * ```ts
 * const policies: Policy[] = [{ name: 'per-caller', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 }];
 * ```
 */
export type Policy = RatePolicy | ConcurrencyPolicy | OverloadPolicy;

/**
 * Knobs of the reservation (hold) mechanism of DESIGN §3. All optional.
 *
 * @example
 * ```ts
 * const options: HoldOptions = { maxNoShows: 3, maxHoldsPerKey: 1_000, minGraceMs: 3_000 };
 * ```
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

/**
 * A malformed policy set, found at construction. `policy` names the policy (or its index when it
 * has no usable name) and `field` the offending field.
 *
 * @example
 * ```ts
 * try { compilePolicies([{ name: 'x', kind: 'rate', limit: 0, windowSeconds: 60 }]); }
 * catch (e) { if (e instanceof PolicyError) console.log(e.policy, e.field); } // 'x' 'limit'
 * ```
 */
export class PolicyError extends Error {
  override readonly name = 'PolicyError';
  /** Policy name, or `#<index>` when the policy has no valid name. */
  readonly policy: string;
  /** The field that is wrong. */
  readonly field: string;

  constructor(policy: string, field: string, problem: string) {
    super(`Policy "${policy}": ${field} ${problem}`);
    this.policy = policy;
    this.field = field;
  }
}

/** Fields every compiled policy shares. */
interface CompiledBase {
  /** Position in the compiled set; stable across stores (used in storage keys). */
  readonly index: number;
  /**
   * Row of these parameters in the Redis script's policy table: `index`, except for the
   * non-default tiers of a tiered rate policy (rows after the last policy).
   */
  readonly paramIndex: number;
  readonly name: string;
  /** Scope label for the wire. */
  readonly scopeName: string;
  /** Key names one caller: rate rejections may reserve. */
  readonly callerScoped: boolean;
  readonly rejectAs: RejectionKind;
  /** `mode: 'shadow'`: decided apart, after the enforced policies admitted; never refuses. */
  readonly shadow: boolean;
  readonly methods: ReadonlySet<A2AMethod>;
  /** The subject of a request under this policy (`caller:x`, `tenant:t`, `agent`), or undefined if it does not apply. */
  readonly subjectOf: (request: RequestIdentity) => string | undefined;
  /**
   * The key of a request in this policy's own table: unique per subject, allocation-free for the
   * single-dimension scopes (the caller name itself for `caller`). Undefined when `subjectOf` is.
   */
  readonly keyOf: (request: RequestIdentity) => string | undefined;
  readonly source: Policy;
}

/**
 * A validated rate policy with its GCRA parameters in integer microseconds. The emission interval
 * is `ceil(windowSeconds · 10⁶ / limit)` µs: the one rounding rule shared by every store, so the
 * limit is never exceeded by rounding.
 *
 * @example
 * ```ts
 * const [p] = compilePolicies([{ name: 'r', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 }]).policies;
 * if (p?.kind === 'rate') p.emissionUs; // 1_000_000
 * ```
 */
export interface CompiledRatePolicy extends CompiledBase {
  readonly kind: 'rate';
  readonly limit: number;
  readonly windowSeconds: number;
  readonly burst: number;
  /** T, µs. */
  readonly emissionUs: number;
  /** τ = (burst − 1)·T, µs. */
  readonly toleranceUs: number;
  /** Window, µs. */
  readonly windowUs: number;
  /** The tier these limits are of (tiered policies only). */
  readonly tier: string | undefined;
  /** Every tier's variant, in declared order (empty when the policy is not tiered). */
  readonly tierVariants: readonly CompiledRatePolicy[];
  /**
   * Usage policies: the unit of `limit` and `burst`. Then `emissionUs` is what admission charges
   * (`estimate` · `unitUs`) and `toleranceUs` is set so that admission conforms exactly when the
   * budget holds at least `max(estimate, 1)` units.
   */
  readonly unit: string | undefined;
  /** µs of budget per unit, `ceil(windowSeconds · 10⁶ / limit)`; = `emissionUs` for request rates. */
  readonly unitUs: number;
}

/**
 * A validated concurrency (or overload in-flight) policy.
 *
 * @example
 * ```ts
 * const [p] = compilePolicies([{ name: 'c', kind: 'concurrency', max: 2 }]).policies;
 * if (p?.kind === 'concurrency') p.leaseTtlMs; // 600_000
 * ```
 */
export interface CompiledConcurrencyPolicy extends CompiledBase {
  readonly kind: 'concurrency';
  readonly max: number;
  /** Lease TTL, ms. */
  readonly leaseTtlMs: number;
  /** Hold estimate before observations, ms. */
  readonly initialHoldEstimateMs: number;
  /**
   * How long leases of message methods are held, when the policy says (see
   * {@link ConcurrencyPolicy.holdUntil}); undefined: until the task ends.
   */
  readonly holdUntil: 'task' | 'response' | undefined;
}

/**
 * A validated overload policy. Its in-flight limit is kept as leases on the key `agent`.
 *
 * @example
 * ```ts
 * const [p] = compilePolicies([{ name: 'o', kind: 'overload', maxEventLoopDelayMs: 200 }]).policies;
 * if (p?.kind === 'overload') p.maxInFlight; // Infinity
 * ```
 */
export interface CompiledOverloadPolicy extends CompiledBase {
  readonly kind: 'overload';
  /** In-flight cap; `Infinity` when not set. */
  readonly maxInFlight: number;
  /** Event-loop delay cap, ms; `Infinity` when not set. */
  readonly maxEventLoopDelayMs: number;
  readonly leaseTtlMs: number;
  readonly initialHoldEstimateMs: number;
}

/**
 * Any compiled policy.
 *
 * @example
 * ```ts
 * const kinds = compilePolicies(policies).policies.map((p: CompiledPolicy) => p.kind);
 * ```
 */
export type CompiledPolicy =
  | CompiledRatePolicy
  | CompiledConcurrencyPolicy
  | CompiledOverloadPolicy;

/**
 * Hold options with defaults applied; grace and bounds in µs.
 *
 * @example
 * ```ts
 * compilePolicies([]).holds.maxNoShows; // 3
 * ```
 */
export interface CompiledHoldOptions {
  readonly maxNoShows: number;
  readonly maxHoldsPerKey: number;
  readonly minGraceUs: number;
  readonly graceFraction: number;
}

/**
 * A validated policy set: the policies in declared order and, per method, those that apply.
 *
 * @example
 * ```ts
 * const set = compilePolicies([{ name: 'r', kind: 'rate', limit: 10, windowSeconds: 1 }]);
 * set.forMethod('GetTask').length; // 1
 * ```
 */
export interface CompiledPolicySet {
  /** The policies in declared order; a tiered rate policy as its default tier's variant. */
  readonly policies: readonly CompiledPolicy[];
  /** Every parameter row, by `paramIndex`: the policies, then the non-default tier variants. */
  readonly rows: readonly CompiledPolicy[];
  /** True when some rate policy has tiers. */
  readonly tiered: boolean;
  readonly holds: CompiledHoldOptions;
  /**
   * Policies that apply to `method`, in declared order, tiered ones as their `tier` variant
   * (precomputed; no allocation).
   */
  forMethod(method: A2AMethod, tier?: string): readonly CompiledPolicy[];
  /** The variant of policy `index` for `tier` (the policy itself when untiered). */
  atIndex(index: number, tier: string | undefined): CompiledPolicy | undefined;
  /** Indexes of the shadow policies of `method` (empty for most sets; precomputed). */
  shadowIndexes(method: A2AMethod): readonly number[];
}

/**
 * Every built-in scope, in documentation order.
 *
 * @example
 * ```ts
 * BUILTIN_SCOPES.includes('tenant'); // true
 * ```
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

const BUILTIN_SCOPE_SET: ReadonlySet<string> = new Set<string>(BUILTIN_SCOPES);

const CALLER_SCOPES: ReadonlySet<string> = new Set(['caller', 'caller+method', 'caller+skill']);

/** Default tenant label when a tenant-scoped policy meets a request without a tenant. */
const NO_TENANT = '-';

function builtinSubject(scope: BuiltinScope): (r: RequestIdentity) => string | undefined {
  switch (scope) {
    case 'caller':
      return (r) => `caller:${r.caller}`;
    case 'tenant':
      return (r) => `tenant:${r.tenant || NO_TENANT}`;
    case 'skill':
      return (r) => (r.skill ? `skill:${r.skill}` : undefined);
    case 'method':
      return (r) => `method:${r.method}`;
    case 'agent':
      return () => 'agent';
    case 'caller+method':
      return (r) => `caller:${r.caller}/method:${r.method}`;
    case 'caller+skill':
      return (r) => (r.skill ? `caller:${r.caller}/skill:${r.skill}` : undefined);
    case 'tenant+method':
      return (r) => `tenant:${r.tenant || NO_TENANT}/method:${r.method}`;
  }
}

const NAME_PATTERN = /^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/;

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function isPositiveFinite(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object' && value !== null)
    return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}

interface Scoped {
  scopeName: string;
  callerScoped: boolean;
  subjectOf: (r: RequestIdentity) => string | undefined;
  keyOf: (r: RequestIdentity) => string | undefined;
}

/** Table keys of the single-dimension scopes; the rest use their subject. */
function builtinKey(scope: BuiltinScope): ((r: RequestIdentity) => string | undefined) | undefined {
  switch (scope) {
    case 'caller':
      return (r) => r.caller;
    case 'tenant':
      return (r) => r.tenant || NO_TENANT;
    case 'skill':
      return (r) => r.skill || undefined;
    case 'method':
      return (r) => r.method;
    case 'agent':
      return () => 'agent';
    default:
      return undefined;
  }
}

function compileScope(label: string, scope: unknown, fallback: BuiltinScope): Scoped {
  const value = scope ?? fallback;
  if (typeof value === 'string') {
    if (!BUILTIN_SCOPE_SET.has(value)) {
      throw new PolicyError(
        label,
        'scope',
        `must be one of ${BUILTIN_SCOPES.join(', ')} or a custom scope, got ${describe(value)}`,
      );
    }
    const subjectOf = builtinSubject(value as BuiltinScope);
    return {
      scopeName: value,
      callerScoped: CALLER_SCOPES.has(value),
      subjectOf,
      keyOf: builtinKey(value as BuiltinScope) ?? subjectOf,
    };
  }
  if (typeof value === 'object' && value !== null) {
    const custom = value as Partial<CustomScope>;
    if (typeof custom.name !== 'string' || !/^[a-z][a-zA-Z0-9_-]{0,62}$/.test(custom.name)) {
      throw new PolicyError(label, 'scope.name', 'must match [a-z][a-zA-Z0-9_-]{0,62}');
    }
    if (typeof custom.key !== 'function') {
      throw new PolicyError(
        label,
        'scope.key',
        'must be a function (request) => string | undefined',
      );
    }
    if (typeof custom.callerScoped !== 'boolean') {
      throw new PolicyError(label, 'scope.callerScoped', 'must be true or false');
    }
    const { key, name } = custom;
    return {
      scopeName: name,
      callerScoped: custom.callerScoped,
      subjectOf: (r) => {
        const k = key(r);
        return k === undefined ? undefined : `${name}:${k}`;
      },
      keyOf: key,
    };
  }
  throw new PolicyError(
    label,
    'scope',
    `must be a string or a custom scope, got ${describe(value)}`,
  );
}

/** A scope whose key and subject are undefined (the policy does not apply) for exempt requests. */
function withExemptions(label: string, exempt: unknown, scoped: Scoped): Scoped {
  if (exempt === undefined) return scoped;
  let isExempt: (r: RequestIdentity) => boolean;
  if (typeof exempt === 'function') {
    isExempt = exempt as (r: RequestIdentity) => boolean;
  } else if (Array.isArray(exempt) && exempt.every((c) => typeof c === 'string' && c !== '')) {
    const callers = new Set<string>(exempt as string[]);
    isExempt = (r) => callers.has(r.caller);
  } else {
    throw new PolicyError(
      label,
      'exempt',
      `must be a list of caller names or a function (request) => boolean, got ${describe(exempt)}`,
    );
  }
  const { keyOf, subjectOf } = scoped;
  return {
    ...scoped,
    keyOf: (r) => (isExempt(r) ? undefined : keyOf(r)),
    subjectOf: (r) => (isExempt(r) ? undefined : subjectOf(r)),
  };
}

function compileHoldUntil(label: string, value: unknown): 'task' | 'response' | undefined {
  if (value === undefined || value === 'task' || value === 'response') return value;
  throw new PolicyError(label, 'holdUntil', `must be "task" or "response", got ${describe(value)}`);
}

function compileMethods(label: string, methods: unknown): ReadonlySet<A2AMethod> {
  if (methods === undefined) return new Set(ALL_A2A_METHODS);
  if (!Array.isArray(methods) || methods.length === 0) {
    throw new PolicyError(label, 'methods', 'must be a non-empty array of A2A method names');
  }
  for (const m of methods) {
    if (!isA2AMethod(m)) {
      throw new PolicyError(
        label,
        'methods',
        `has unknown A2A method ${describe(m)} (known: ${Object.keys(A2A_METHODS).join(', ')})`,
      );
    }
  }
  return new Set(methods as A2AMethod[]);
}

function compileRejectAs(label: string, value: unknown): RejectionKind {
  if (value === undefined || value === 'quota') return 'quota';
  if (value === 'overload') return 'overload';
  throw new PolicyError(label, 'rejectAs', `must be "quota" or "overload", got ${describe(value)}`);
}

function optionalPositive(label: string, field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (!isPositiveFinite(value)) {
    throw new PolicyError(label, field, `must be a positive number, got ${describe(value)}`);
  }
  return value;
}

function compileOne(
  raw: unknown,
  index: number,
  names: Set<string>,
  extraRows: CompiledPolicy[],
  nextRow: () => number,
): CompiledPolicy {
  if (typeof raw !== 'object' || raw === null) {
    throw new PolicyError(`#${index}`, 'policy', `must be an object, got ${describe(raw)}`);
  }
  const p = raw as Record<string, unknown>;
  const name = p.name;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new PolicyError(
      `#${index}`,
      'name',
      `must be 1–64 printable ASCII characters without surrounding spaces, got ${describe(name)}`,
    );
  }
  if (names.has(name)) throw new PolicyError(name, 'name', 'is used by more than one policy');
  names.add(name);
  const methods = compileMethods(name, p.methods);
  const source = raw as Policy;
  if (p.mode !== undefined && p.mode !== 'enforce' && p.mode !== 'shadow') {
    throw new PolicyError(name, 'mode', `must be "enforce" or "shadow", got ${describe(p.mode)}`);
  }
  const shadow = p.mode === 'shadow';

  switch (p.kind) {
    case 'rate': {
      const scoped = withExemptions(name, p.exempt, compileScope(name, p.scope, 'caller'));
      const rejectAs = compileRejectAs(name, p.rejectAs);
      const common = { kind: 'rate' as const, index, paramIndex: index, name, shadow, ...scoped };
      if (p.tiers !== undefined || p.defaultTier !== undefined) {
        for (const field of ['limit', 'windowSeconds', 'burst'] as const) {
          if (p[field] !== undefined) {
            throw new PolicyError(name, field, 'must be left out when tiers are given');
          }
        }
        const compiled = compileTierVariants(
          { ...common, rejectAs, methods, source },
          p.tiers,
          p.defaultTier,
          nextRow,
          p.unit === undefined && p.estimate === undefined
            ? undefined
            : { unit: p.unit, estimate: p.estimate },
        );
        if ('problem' in compiled) throw new PolicyError(name, compiled.field, compiled.problem);
        extraRows.push(...compiled.extraRows);
        return compiled.policy;
      }
      const params = rateParams(p, '');
      if ('problem' in params) throw new PolicyError(name, params.field, params.problem);
      if (p.unit === undefined) {
        if (p.estimate !== undefined) {
          throw new PolicyError(name, 'estimate', 'is for usage policies (give `unit`)');
        }
        return {
          ...common,
          rejectAs,
          methods,
          source,
          ...params,
          tier: undefined,
          tierVariants: [],
          unit: undefined,
          unitUs: params.emissionUs,
        };
      }
      if (typeof p.unit !== 'string' || !/^[a-z][a-z0-9_-]{0,31}$/.test(p.unit)) {
        throw new PolicyError(
          name,
          'unit',
          `must match [a-z][a-z0-9_-]{0,31}, got ${describe(p.unit)}`,
        );
      }
      const estimate = (p.estimate ?? 0) as number;
      if (!Number.isSafeInteger(estimate) || estimate < 0 || estimate > params.burst) {
        throw new PolicyError(
          name,
          'estimate',
          `must be an integer from 0 to burst (${params.burst}), got ${describe(p.estimate)}`,
        );
      }
      const unitUs = params.emissionUs;
      return {
        ...common,
        // A budget is not a queue of slots: usage policies never hold.
        callerScoped: false,
        rejectAs,
        methods,
        source,
        ...params,
        emissionUs: estimate * unitUs,
        toleranceUs: params.toleranceUs - Math.max(0, estimate - 1) * unitUs,
        tier: undefined,
        tierVariants: [],
        unit: p.unit,
        unitUs,
      };
    }
    case 'concurrency': {
      if (!isPositiveInteger(p.max)) {
        throw new PolicyError(name, 'max', `must be a positive integer, got ${describe(p.max)}`);
      }
      return {
        kind: 'concurrency',
        index,
        paramIndex: index,
        shadow,
        name,
        ...withExemptions(name, p.exempt, compileScope(name, p.scope, 'caller')),
        rejectAs: compileRejectAs(name, p.rejectAs),
        methods,
        source,
        max: p.max,
        leaseTtlMs: optionalPositive(name, 'leaseTtlSeconds', p.leaseTtlSeconds, 600) * 1000,
        initialHoldEstimateMs: optionalPositive(
          name,
          'initialHoldEstimateMs',
          p.initialHoldEstimateMs,
          1000,
        ),
        holdUntil: compileHoldUntil(name, p.holdUntil),
      };
    }
    case 'overload': {
      if (p.scope !== undefined && p.scope !== 'agent') {
        throw new PolicyError(
          name,
          'scope',
          `of an overload policy is always "agent", got ${describe(p.scope)}`,
        );
      }
      if (p.maxInFlight === undefined && p.maxEventLoopDelayMs === undefined) {
        throw new PolicyError(name, 'maxInFlight', 'or maxEventLoopDelayMs must be set');
      }
      if (p.maxInFlight !== undefined && !isPositiveInteger(p.maxInFlight)) {
        throw new PolicyError(
          name,
          'maxInFlight',
          `must be a positive integer, got ${describe(p.maxInFlight)}`,
        );
      }
      return {
        kind: 'overload',
        index,
        paramIndex: index,
        shadow,
        name,
        ...withExemptions(name, p.exempt, compileScope(name, 'agent', 'agent')),
        rejectAs: 'overload',
        methods,
        source,
        maxInFlight: (p.maxInFlight as number | undefined) ?? Number.POSITIVE_INFINITY,
        maxEventLoopDelayMs: optionalPositive(
          name,
          'maxEventLoopDelayMs',
          p.maxEventLoopDelayMs,
          Number.POSITIVE_INFINITY,
        ),
        leaseTtlMs: optionalPositive(name, 'leaseTtlSeconds', p.leaseTtlSeconds, 600) * 1000,
        initialHoldEstimateMs: optionalPositive(
          name,
          'initialHoldEstimateMs',
          p.initialHoldEstimateMs,
          1000,
        ),
      };
    }
    default:
      throw new PolicyError(
        name,
        'kind',
        `must be "rate", "concurrency" or "overload", got ${describe(p.kind)}`,
      );
  }
}

function compileHolds(options: HoldOptions | undefined): CompiledHoldOptions {
  const o = options ?? {};
  const label = '(hold options)';
  const maxNoShows = o.maxNoShows ?? 3;
  if (!Number.isSafeInteger(maxNoShows) || maxNoShows < 0) {
    throw new PolicyError(
      label,
      'maxNoShows',
      `must be an integer ≥ 0, got ${describe(o.maxNoShows)}`,
    );
  }
  const maxHoldsPerKey = o.maxHoldsPerKey ?? 1000;
  if (!Number.isSafeInteger(maxHoldsPerKey) || maxHoldsPerKey < 0) {
    throw new PolicyError(
      label,
      'maxHoldsPerKey',
      `must be an integer ≥ 0, got ${describe(o.maxHoldsPerKey)}`,
    );
  }
  const minGraceMs = optionalPositive(label, 'minGraceMs', o.minGraceMs, 3000);
  const graceFraction = o.graceFraction ?? 0.1;
  if (typeof graceFraction !== 'number' || !(graceFraction >= 0 && graceFraction <= 1)) {
    throw new PolicyError(
      label,
      'graceFraction',
      `must be between 0 and 1, got ${describe(graceFraction)}`,
    );
  }
  return { maxNoShows, maxHoldsPerKey, minGraceUs: Math.round(minGraceMs * 1000), graceFraction };
}

/**
 * Validates a policy set and precomputes everything the decision needs. Throws {@link PolicyError}
 * naming the policy and field for: a missing or duplicate name, an unknown kind, scope or method, a
 * limit, window or max that is not a positive integer, a burst below 1, an overload policy with no
 * threshold.
 *
 * @example
 * ```ts
 * const set = compilePolicies([
 *   { name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage'], limit: 60, windowSeconds: 60, burst: 10 },
 *   { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 1000, windowSeconds: 60 },
 * ]);
 * set.forMethod('SendMessage').map((p) => p.name); // ['per-caller', 'per-tenant']
 * ```
 */
export function compilePolicies(
  policies: readonly Policy[],
  holdOptions?: HoldOptions,
): CompiledPolicySet {
  if (!Array.isArray(policies)) {
    throw new PolicyError('(policy set)', 'policies', 'must be an array');
  }
  const names = new Set<string>();
  const extraRows: CompiledPolicy[] = [];
  let rowCount = policies.length;
  const nextRow = () => rowCount++;
  const compiled = policies.map((p, i) => compileOne(p, i, names, extraRows, nextRow));
  const byMethod = new Map<A2AMethod, readonly CompiledPolicy[]>();
  const shadowByMethod = new Map<A2AMethod, readonly number[]>();
  for (const method of ALL_A2A_METHODS) {
    byMethod.set(
      method,
      compiled.filter((p) => p.methods.has(method) && !p.shadow),
    );
    shadowByMethod.set(
      method,
      compiled.filter((p) => p.methods.has(method) && p.shadow).map((p) => p.index),
    );
  }
  const none: readonly CompiledPolicy[] = [];
  const noIndexes: readonly number[] = [];
  const plain = (method: A2AMethod) => byMethod.get(method) ?? none;
  const byTier = tierSelections(compiled, ALL_A2A_METHODS, plain);
  const forMethod =
    byTier.size === 0
      ? plain
      : (method: A2AMethod, tier?: string) =>
          (tier === undefined ? undefined : byTier.get(tier)?.get(method)) ?? plain(method);
  return {
    policies: compiled,
    rows: [...compiled, ...extraRows],
    tiered: byTier.size > 0,
    holds: compileHolds(holdOptions),
    forMethod,
    shadowIndexes: (method) => shadowByMethod.get(method) ?? noIndexes,
    atIndex: (i, tier) => {
      const p = compiled[i];
      return p === undefined ? undefined : variantFor(p, tier);
    },
  };
}
