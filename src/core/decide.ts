/**
 * @module decide
 * The admission decision of DESIGN §3 over every policy that applies to a request: all-or-nothing,
 * queue-aware delays with held slots for caller-scoped rate policies, lazy refunds of expired
 * holds, no-show credit, lease-based concurrency and overload. Pure: time is an argument and the
 * state lives behind {@link DecisionState}, which a store implements over its own tables.
 */

import { MESSAGE_METHODS } from './a2a-methods.js';
import { availableNow, chargeTatUs, conformDelayUs, refundTatUs } from './gcra.js';
import type {
  CompiledConcurrencyPolicy,
  CompiledHoldOptions,
  CompiledOverloadPolicy,
  CompiledPolicy,
  CompiledPolicySet,
  CompiledRatePolicy,
  RequestIdentity,
} from './policy.js';
import {
  type Decision,
  describeQuota,
  type LeaseRef,
  type LimitState,
  type RejectedDecision,
  type Rejection,
  wireDelaySeconds,
} from './rejection.js';

/**
 * A slot held for one (policy key, caller, messageId): claimable in `[slotUs, expiresUs]`.
 *
 * @example
 * ```ts
 * const hold: Hold = { slotUs: 12_000_000, expiresUs: 15_000_000 };
 * ```
 */
export interface Hold {
  /** When the retry conforms, µs. */
  readonly slotUs: number;
  /** Slot + grace, µs; unclaimed past this, the hold is refunded. */
  readonly expiresUs: number;
}

/**
 * What a rate key keeps besides its timestamp, only while it has holds or no-shows.
 *
 * @example
 * ```ts
 * const extra: RateExtra = { holds: new Map(), nextExpiryUs: Infinity, noShows: 0, noShowsAtUs: 0 };
 * ```
 */
export interface RateExtra {
  /** Holds by `caller \0 messageId`. */
  holds: Map<string, Hold>;
  /** Earliest `expiresUs` among holds (a lower bound), µs; expiry is only scanned past it. */
  nextExpiryUs: number;
  /** Unclaimed expirations, decayed one per window. */
  noShows: number;
  /** Time the no-show decay last advanced, µs. */
  noShowsAtUs: number;
}

/**
 * One concurrency lease.
 *
 * @example
 * ```ts
 * const lease: Lease = { acquiredMs: 0, expiresMs: 600_000 };
 * ```
 */
export interface Lease {
  /** When admitted, ms. */
  readonly acquiredMs: number;
  /** Freed as abandoned past this unless renewed, ms. */
  expiresMs: number;
}

/**
 * The leases of one concurrency key and its observed hold time.
 *
 * @example
 * ```ts
 * const set: LeaseSet = { leases: new Map(), ewmaHoldMs: undefined };
 * ```
 */
export interface LeaseSet {
  leases: Map<string, Lease>;
  /** Exponentially weighted mean of observed hold times, ms. */
  ewmaHoldMs: number | undefined;
}

/**
 * A concurrency-like policy (concurrency, or overload with an in-flight cap).
 *
 * @example
 * ```ts
 * const p: LeasePolicy = set.policies[1] as LeasePolicy;
 * ```
 */
export type LeasePolicy = CompiledConcurrencyPolicy | CompiledOverloadPolicy;

/**
 * The key a store returns for a subject it can neither keep nor give a key of its own (the
 * in-process store at `maxKeys` when every key it could evict holds slots): a bucket shared by
 * such subjects, limited together, never holding slots. Evicted keys' states go to hashed
 * overflow buckets instead (see `MemoryStore`).
 *
 * @example
 * ```ts
 * state.rateKey(policy, 'caller:new', nowUs) === OVERFLOW_KEY; // table full
 * ```
 */
export const OVERFLOW_KEY = '\u0000overflow';

/**
 * The state a decision reads and writes. Stores implement it over their own tables; the decision
 * calls it synchronously, so one call of {@link decide} is atomic for an in-process store.
 *
 * @example
 * ```ts
 * const decision = decide(policySet, request, clock.nowMs(), memoryTables);
 * ```
 */
export interface DecisionState {
  /** The storage key for `key` (from `policy.keyOf`), or {@link OVERFLOW_KEY} when the table is full. */
  rateKey(policy: CompiledRatePolicy, key: string, nowUs: number): string;
  /** `tatUs` of a key, or undefined for a key with no state (full bucket). */
  getTat(policy: CompiledRatePolicy, key: string): number | undefined;
  /** Holds and no-shows of a key, if any. */
  getExtra(policy: CompiledRatePolicy, key: string): RateExtra | undefined;
  /** Writes a key back; the store may drop it when `tatUs <= nowUs` and `extra` is undefined. */
  putRate(
    policy: CompiledRatePolicy,
    key: string,
    tatUs: number,
    extra: RateExtra | undefined,
    nowUs: number,
  ): void;
  /** Leases of a key, if any. */
  getLeases(policy: LeasePolicy, key: string): LeaseSet | undefined;
  /** Writes leases back; undefined drops the key. */
  putLeases(policy: LeasePolicy, key: string, set: LeaseSet | undefined): void;
  /** A fresh, unique lease id. */
  nextLeaseId(): string;
}

/**
 * A request as the decision sees it: identity plus live signals from the server layer.
 *
 * @example
 * ```ts
 * const input: DecisionInput = { caller: 'a', method: 'SendMessage', messageId: 'm1', eventLoopDelayMs: 12 };
 * ```
 */
export interface DecisionInput extends RequestIdentity {
  /** Current event-loop delay, ms (for overload policies with `maxEventLoopDelayMs`). */
  readonly eventLoopDelayMs?: number | undefined;
  /**
   * Decide under exactly these policies of the set (indexes into `policies`, in set order)
   * instead of those of `method`: a resubscription made of a duplicate stream is decided under
   * SubscribeToTask's policies and the stream limits of SendStreamingMessage. Indexes, not
   * compiled policies, so a store deciding with its own compilation of the same set (the Redis
   * store's insurance limiter) picks the same ones.
   */
  readonly policyIndexes?: readonly number[] | undefined;
}

/**
 * The policies a decision applies: `input.policyIndexes` when given, else those of the method;
 * tiered rate policies as the variant of `input.tier`. Every store selects with this function.
 *
 * @example
 * ```ts
 * policiesOf(set, { caller: 'a', method: 'GetTask' }).map((p) => p.name);
 * ```
 */
export function policiesOf(
  policySet: CompiledPolicySet,
  input: DecisionInput,
): readonly CompiledPolicy[] {
  const indexes = input.policyIndexes;
  if (indexes === undefined) return policySet.forMethod(input.method, input.tier);
  const out: CompiledPolicy[] = [];
  for (const i of indexes) {
    const p = policySet.atIndex(i, input.tier);
    if (p !== undefined) out.push(p);
  }
  return out;
}

/**
 * Smallest delay of concurrency and overload rejections, ms (DESIGN §3). Shared with the Redis
 * script so both stores estimate identically.
 *
 * @example
 * ```ts
 * Math.max(LEASE_MIN_DELAY_MS, estimateMs); // never below 1 s
 * ```
 */
export const LEASE_MIN_DELAY_MS = 1000;

/**
 * Weight of a new observed lease hold time in the key's exponentially weighted mean (unitless).
 * Shared with the Redis script.
 *
 * @example
 * ```ts
 * ewmaMs = ewmaMs + LEASE_EWMA_ALPHA * (heldMs - ewmaMs);
 * ```
 */
export const LEASE_EWMA_ALPHA = 0.2;

/**
 * The key under which a request may hold or claim a slot in a caller-scoped rate policy:
 * `caller \0 messageId`, or undefined when the request cannot hold (no messageId, or a method
 * that carries none).
 *
 * @example
 * ```ts
 * holdKeyOf({ caller: 'a', method: 'SendMessage', messageId: 'm1' }); // 'a\u0000m1'
 * holdKeyOf({ caller: 'a', method: 'GetTask' }); // undefined
 * ```
 */
export function holdKeyOf(input: RequestIdentity): string | undefined {
  return input.messageId !== undefined && MESSAGE_METHODS.has(input.method)
    ? `${input.caller}\u0000${input.messageId}`
    : undefined;
}

/**
 * µs → the exact `retryAfterMs` of a rejection: rounded up to whole milliseconds.
 *
 * @example
 * ```ts
 * retryAfterMsOf(1_000_001); // 1001
 * ```
 */
export function retryAfterMsOf(delayUs: number): number {
  return Math.ceil(delayUs / 1000);
}

/**
 * Evaluation of one policy for one request (phase 1). Steps are pooled and overwritten by each
 * decision (decisions are synchronous and never nested), so the hot path allocates none.
 */
interface Step {
  policy: CompiledPolicy;
  /** Key in the policy's table (see `CompiledPolicy.keyOf`). */
  key: string;
  /** Rate: timestamp after lazy refunds (undefined = full bucket). */
  tatUs: number | undefined;
  extra: RateExtra | undefined;
  /** Rate: this request's hold key, when it may hold or claim. */
  holdKey: string | undefined;
  /** Rate: caller-scoped and not the overflow bucket, so this request may hold a slot. */
  mayHold: boolean;
  /** Rate: the request's own hold in this policy, if any. */
  hold: Hold | undefined;
  /** Leases: the key's set after pruning. */
  leases: LeaseSet | undefined;
  /** µs until this policy admits (0 = admits now). */
  delayUs: number;
  /** Rate state needs writing back even on rejection (refunds happened). */
  dirty: boolean;
}

/**
 * Refunds holds that expired unclaimed, counts them as no-shows and decays no-shows by one per
 * window. Returns the refunded timestamp.
 */
function settleExtra(
  extra: RateExtra,
  tatUs: number | undefined,
  nowUs: number,
  p: CompiledRatePolicy,
): number | undefined {
  let tat = tatUs;
  if (nowUs > extra.nextExpiryUs) {
    let next = Number.POSITIVE_INFINITY;
    for (const [k, h] of extra.holds) {
      if (nowUs > h.expiresUs) {
        extra.holds.delete(k);
        if (tat !== undefined && tat > nowUs) tat = refundTatUs(tat, nowUs, p);
        if (extra.noShows === 0) extra.noShowsAtUs = nowUs;
        extra.noShows += 1;
      } else if (h.expiresUs < next) {
        next = h.expiresUs;
      }
    }
    extra.nextExpiryUs = next;
  }
  if (extra.noShows > 0) {
    const forgiven = Math.floor((nowUs - extra.noShowsAtUs) / p.windowUs);
    if (forgiven > 0) {
      extra.noShows = Math.max(0, extra.noShows - forgiven);
      extra.noShowsAtUs += forgiven * p.windowUs;
    }
  }
  return tat;
}

function isEmptyExtra(extra: RateExtra | undefined): boolean {
  return extra === undefined || (extra.holds.size === 0 && extra.noShows === 0);
}

/**
 * Frees leases not renewed before their expiry (abandoned by a crashed holder).
 *
 * @example
 * ```ts
 * pruneLeases(set, clock.nowMs());
 * ```
 */
export function pruneLeases(set: LeaseSet | undefined, nowMs: number): LeaseSet | undefined {
  if (set === undefined) return undefined;
  for (const [id, lease] of set.leases) if (lease.expiresMs <= nowMs) set.leases.delete(id);
  return set;
}

/**
 * Share of the observed mean hold time a lease that has already outlived it is still expected to
 * run (unitless). Such a lease is a long one; half a mean hold is the estimate both stores use.
 *
 * @example
 * ```ts
 * const remainingMs = ewmaMs * LEASE_OVERDUE_FRACTION;
 * ```
 */
export const LEASE_OVERDUE_FRACTION = 0.5;

/**
 * Delay estimate for a full concurrency key, from the key's real state: each held lease is
 * expected to end one observed mean hold time (EWMA over releases on this key, by every replica
 * sharing the store) after it was acquired — or, already past that, within
 * {@link LEASE_OVERDUE_FRACTION} of it — and the request fits once `inFlight − max + 1` of them
 * (its position in line) have ended. At least {@link LEASE_MIN_DELAY_MS}.
 */
function leaseDelayMs(set: LeaseSet, max: number, initialMs: number, nowMs: number): number {
  const holdMs = set.ewmaHoldMs ?? initialMs;
  const ends: number[] = [];
  for (const lease of set.leases.values()) {
    const left = lease.acquiredMs + holdMs - nowMs;
    ends.push(left > 0 ? left : holdMs * LEASE_OVERDUE_FRACTION);
  }
  ends.sort((a, b) => a - b);
  const ahead = Math.min(ends.length, Math.max(1, ends.length - max + 1));
  return Math.max(LEASE_MIN_DELAY_MS, Math.ceil(ends[ahead - 1] ?? 0));
}

const STEP_POOL: Step[] = [];

function newStep(index: number): Step {
  const step: Step = {
    policy: undefined as unknown as CompiledPolicy,
    key: '',
    tatUs: undefined,
    extra: undefined,
    holdKey: undefined,
    mayHold: false,
    hold: undefined,
    leases: undefined,
    delayUs: 0,
    dirty: false,
  };
  STEP_POOL[index] = step;
  return step;
}

/** Fills `step` for policy `p`; false when the policy does not apply to this request. */
function evaluate(
  step: Step,
  p: CompiledPolicy,
  input: DecisionInput,
  nowMs: number,
  nowUs: number,
  state: DecisionState,
): boolean {
  const tableKey = p.keyOf(input);
  if (tableKey === undefined) return false;
  step.policy = p;
  if (p.kind === 'rate') {
    const key = state.rateKey(p, tableKey, nowUs);
    let tatUs = state.getTat(p, key);
    const extra = state.getExtra(p, key);
    // Settling holds may refund or empty the extra state: such a key is written back either way.
    if (extra !== undefined) tatUs = settleExtra(extra, tatUs, nowUs, p);
    // The hold key is built only where a hold can exist (the key has holds) or be made (below).
    const mayHold = p.callerScoped && key !== OVERFLOW_KEY;
    const holdKey = mayHold && extra !== undefined ? holdKeyOf(input) : undefined;
    const hold = holdKey === undefined ? undefined : extra?.holds.get(holdKey);
    step.key = key;
    step.tatUs = tatUs;
    step.extra = extra;
    step.holdKey = holdKey;
    step.mayHold = mayHold;
    step.hold = hold;
    step.leases = undefined;
    step.delayUs =
      hold === undefined ? conformDelayUs(tatUs, nowUs, p) : Math.max(0, hold.slotUs - nowUs);
    step.dirty = extra !== undefined;
    return true;
  }
  const leases = pruneLeases(state.getLeases(p, tableKey), nowMs);
  let delayMs = 0;
  const max = p.kind === 'concurrency' ? p.max : p.maxInFlight;
  if (leases !== undefined && leases.leases.size >= max) {
    delayMs = leaseDelayMs(leases, max, p.initialHoldEstimateMs, nowMs);
  }
  if (p.kind === 'overload') {
    const lag = input.eventLoopDelayMs;
    if (lag !== undefined && lag > p.maxEventLoopDelayMs) {
      delayMs = Math.max(delayMs, LEASE_MIN_DELAY_MS, Math.ceil(2 * lag));
    }
  }
  step.key = tableKey;
  step.tatUs = undefined;
  step.extra = undefined;
  step.holdKey = undefined;
  step.mayHold = false;
  step.hold = undefined;
  step.leases = leases;
  step.delayUs = delayMs * 1000;
  step.dirty = false;
  return true;
}

/**
 * The `RateLimit` state (r, t) of a rate policy whose key holds `tatUs` at `nowUs`.
 *
 * @example
 * ```ts
 * limitStateOf(policy, undefined, nowUs); // full bucket: remaining = burst, resetSeconds 0
 * ```
 */
export function limitStateOf(
  p: CompiledRatePolicy,
  tatUs: number | undefined,
  nowUs: number,
): LimitState {
  const { remaining, nextUs } = availableNow(
    tatUs,
    nowUs,
    p.unit === undefined
      ? p
      : { burst: p.burst, emissionUs: p.unitUs, toleranceUs: (p.burst - 1) * p.unitUs },
  );
  const resetSeconds = nextUs > 0 ? Math.ceil(nextUs / 1_000_000) : 0;
  const { name: policy, limit, windowSeconds, unit } = p;
  return unit === undefined
    ? { policy, limit, windowSeconds, remaining, resetSeconds }
    : { policy, limit, windowSeconds, remaining, resetSeconds, unit };
}

/**
 * The `RateLimit` state of the policy that rejected a request: r = 0 and t = the delay in whole
 * wire seconds.
 *
 * @example
 * ```ts
 * rejectingLimitState(policy, 12_000_000).resetSeconds; // 12
 * ```
 */
export function rejectingLimitState(p: CompiledRatePolicy, delayUs: number): LimitState {
  const resetSeconds = wireDelaySeconds(retryAfterMsOf(delayUs));
  const { name: policy, limit, windowSeconds, unit } = p;
  return unit === undefined
    ? { policy, limit, windowSeconds, remaining: 0, resetSeconds }
    : { policy, limit, windowSeconds, remaining: 0, resetSeconds, unit };
}

function graceUs(delayUs: number, holds: CompiledHoldOptions): number {
  return Math.max(holds.minGraceUs, Math.floor(delayUs * holds.graceFraction));
}

/**
 * Whether the setter may reserve a slot for this request, and if so the slot, µs.
 * Conditions (DESIGN §3): caller-scoped rate policy, a messageId, no existing hold, fewer than
 * `maxNoShows` no-shows, fewer than `maxHoldsPerKey` holds, slot at most one window ahead.
 */
function reservableSlotUs(
  step: Step,
  nowUs: number,
  holds: CompiledHoldOptions,
): number | undefined {
  const p = step.policy;
  if (p.kind !== 'rate' || step.holdKey === undefined || step.hold !== undefined) return undefined;
  const extra = step.extra;
  if (extra !== undefined) {
    if (extra.noShows >= holds.maxNoShows) return undefined;
    if (extra.holds.size >= holds.maxHoldsPerKey) return undefined;
  } else if (holds.maxHoldsPerKey === 0 || holds.maxNoShows === 0) {
    return undefined;
  }
  if (step.delayUs > p.windowUs) return undefined;
  return nowUs + step.delayUs;
}

const QUOTA_TEXT = new WeakMap<CompiledPolicy, string>();

/** "60 requests per 60 s", cached per policy. */
function policyQuotaText(p: CompiledPolicy): string {
  let text = QUOTA_TEXT.get(p);
  if (text === undefined) {
    text = quotaText(p);
    QUOTA_TEXT.set(p, text);
  }
  return text;
}

function quotaText(p: CompiledPolicy): string {
  switch (p.kind) {
    case 'rate': {
      if (p.unit !== undefined) return `${p.limit} ${p.unit} per ${p.windowSeconds} s`;
      const text = describeQuota({ limit: p.limit, windowSeconds: p.windowSeconds, remaining: 0 });
      return p.tier === undefined ? text : `tier ${p.tier}: ${text}`;
    }
    case 'concurrency':
      return describeQuota({ limit: p.max, remaining: 0 });
    case 'overload':
      return Number.isFinite(p.maxInFlight)
        ? `${p.maxInFlight} requests in flight`
        : `event-loop delay ${p.maxEventLoopDelayMs} ms`;
  }
}

/**
 * The {@link Rejection} value when policy `p` set the delay for `subject`: kind from the policy,
 * `quota` for quota rejections of rate and concurrency policies, `reserved` for rate policies.
 * Every store builds its rejections with this function.
 *
 * @example
 * ```ts
 * rejectionOf(policy, 'caller:a', input, 1000, true).message; // 'caller:a exceeded per-caller …'
 * ```
 */
export function rejectionOf(
  p: CompiledPolicy,
  subject: string,
  input: DecisionInput,
  retryAfterMs: number,
  reserved: boolean | undefined,
): Rejection {
  const seconds = wireDelaySeconds(retryAfterMs);
  const kind = p.rejectAs;
  const message =
    kind === 'overload'
      ? `Agent overloaded (${p.name}: ${policyQuotaText(p)}); retry in ${seconds} s`
      : `${subject} exceeded ${p.name} (${policyQuotaText(p)}) for ${input.method}; retry in ${seconds} s`;
  const rejection: { -readonly [K in keyof Rejection]: Rejection[K] } = {
    kind,
    retryAfterMs,
    policy: p.name,
    scope: p.scopeName,
    subject,
    method: input.method,
    message,
  };
  if (kind === 'quota') {
    if (p.kind === 'rate') {
      rejection.quota = { limit: p.limit, windowSeconds: p.windowSeconds, remaining: 0 };
    } else if (p.kind === 'concurrency') {
      rejection.quota = { limit: p.max, remaining: 0 };
    }
  }
  if (reserved !== undefined) rejection.reserved = reserved;
  if (p.kind === 'rate' && p.tier !== undefined) rejection.tier = p.tier;
  return rejection;
}

/**
 * Decides one request against every policy of `policySet` that applies to its method, at `nowMs`.
 * Admitted: every rate policy is charged (or a held slot claimed) and every lease taken. Rejected:
 * nothing is charged, except that a caller-scoped rate policy which set the delay reserves this
 * request's slot when it carries a messageId (DESIGN §3).
 *
 * @example
 * ```ts
 * const set = compilePolicies([{ name: 'per-caller', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 }]);
 * const d = decide(set, { caller: 'a', method: 'SendMessage', messageId: 'm1' }, 0, tables);
 * if (!d.admitted) d.rejection.retryAfterMs; // exact ms until this request conforms
 * ```
 */
export function decide(
  policySet: CompiledPolicySet,
  input: DecisionInput,
  nowMs: number,
  state: DecisionState,
): Decision {
  const nowUs = Math.floor(nowMs * 1000);
  const policies = policiesOf(policySet, input);
  let count = 0;
  let setter: Step | undefined;
  for (const p of policies) {
    const step = STEP_POOL[count] ?? newStep(count);
    if (!evaluate(step, p, input, nowMs, nowUs, state)) continue;
    count++;
    if (step.delayUs > 0 && (setter === undefined || step.delayUs > setter.delayUs)) setter = step;
  }

  if (setter === undefined) return admit(count, nowMs, nowUs, state);

  // Rejected: write back lazy refunds; reserve in the setter if allowed.
  let reserved: boolean | undefined;
  if (setter.policy.kind === 'rate') {
    if (setter.hold !== undefined) {
      reserved = true;
    } else {
      if (setter.holdKey === undefined && setter.mayHold) setter.holdKey = holdKeyOf(input);
      const slotUs = reservableSlotUs(setter, nowUs, policySet.holds);
      reserved = slotUs !== undefined;
      if (slotUs !== undefined && setter.holdKey !== undefined) {
        const p = setter.policy;
        const extra = setter.extra ?? {
          holds: new Map<string, Hold>(),
          nextExpiryUs: Number.POSITIVE_INFINITY,
          noShows: 0,
          noShowsAtUs: nowUs,
        };
        const expiresUs = slotUs + graceUs(setter.delayUs, policySet.holds);
        extra.holds.set(setter.holdKey, { slotUs, expiresUs });
        if (expiresUs < extra.nextExpiryUs) extra.nextExpiryUs = expiresUs;
        setter.extra = extra;
        setter.tatUs = chargeTatUs(setter.tatUs, nowUs, p);
        setter.dirty = true;
      }
    }
  }
  const limits: LimitState[] = [];
  for (let i = 0; i < count; i++) {
    const step = STEP_POOL[i] as Step;
    const p = step.policy;
    if (p.kind !== 'rate') continue;
    if (step.dirty) {
      state.putRate(
        p,
        step.key,
        step.tatUs ?? nowUs,
        isEmptyExtra(step.extra) ? undefined : step.extra,
        nowUs,
      );
    }
    limits.push(
      step === setter ? rejectingLimitState(p, step.delayUs) : limitStateOf(p, step.tatUs, nowUs),
    );
  }
  return rejectedDecision(setter, input, setter.delayUs, reserved, limits);
}

/**
 * The rejected decision whose delay `delayUs` was set by `setter` (its policy and table key):
 * the {@link Rejection} (see {@link rejectionOf}) and the rate states for the headers. Every store
 * assembles its rejections with this function.
 *
 * @example
 * ```ts
 * rejectedDecision({ policy, key: 'a' }, input, 1_000_000, true, limits).rejection.retryAfterMs; // 1000
 * ```
 */
export function rejectedDecision(
  setter: { readonly policy: CompiledPolicy; readonly key: string },
  input: RequestIdentity,
  delayUs: number,
  reserved: boolean | undefined,
  limits: readonly LimitState[],
): RejectedDecision {
  const subject = setter.policy.subjectOf(input) ?? setter.key;
  return {
    admitted: false,
    rejection: rejectionOf(setter.policy, subject, input, retryAfterMsOf(delayUs), reserved),
    limits,
  };
}

function admit(count: number, nowMs: number, nowUs: number, state: DecisionState): Decision {
  const leases: LeaseRef[] = [];
  let claimedHold = false;
  const limits: LimitState[] = [];
  for (let i = 0; i < count; i++) {
    const step = STEP_POOL[i] as Step;
    const p = step.policy;
    if (p.kind === 'rate') {
      if (step.hold !== undefined && step.holdKey !== undefined && step.extra !== undefined) {
        step.extra.holds.delete(step.holdKey);
        if (step.extra.noShows > 0) step.extra.noShows -= 1;
        claimedHold = true;
      } else {
        step.tatUs = chargeTatUs(step.tatUs, nowUs, p);
      }
      state.putRate(
        p,
        step.key,
        step.tatUs ?? nowUs,
        isEmptyExtra(step.extra) ? undefined : step.extra,
        nowUs,
      );
      limits.push(limitStateOf(p, step.tatUs, nowUs));
    } else if (p.kind === 'concurrency' || Number.isFinite(p.maxInFlight)) {
      const set = step.leases ?? { leases: new Map<string, Lease>(), ewmaHoldMs: undefined };
      const leaseId = state.nextLeaseId();
      set.leases.set(leaseId, { acquiredMs: nowMs, expiresMs: nowMs + p.leaseTtlMs });
      state.putLeases(p, step.key, set);
      leases.push({ policyIndex: p.index, key: step.key, leaseId });
    }
  }
  return { admitted: true, limits, leases, claimedHold };
}

/**
 * Charges `units` of reported usage to a usage policy's key (`policy.keyOf` of the request that
 * used them): the budget's timestamp moves `units · unitUs` later from `max(tat, now)`, with no
 * conformance check — usage already happened, so the budget may go into debt, and the next
 * admission waits exactly until it holds a unit again. Every store charges with this rule.
 *
 * @example
 * ```ts
 * chargeUsage(tokensPolicy, 'alice', 4_000, clock.nowMs(), tables);
 * ```
 */
export function chargeUsage(
  policy: CompiledRatePolicy,
  key: string,
  units: number,
  nowMs: number,
  state: DecisionState,
): void {
  const nowUs = Math.floor(nowMs * 1000);
  const k = state.rateKey(policy, key, nowUs);
  const tatUs = state.getTat(policy, k);
  const from = tatUs === undefined || tatUs < nowUs ? nowUs : tatUs;
  state.putRate(policy, k, from + units * policy.unitUs, state.getExtra(policy, k), nowUs);
}

/**
 * Ends a lease: frees its slot and feeds its hold time into the key's estimate. Unknown or
 * already-expired leases are ignored (release is idempotent).
 *
 * @example
 * ```ts
 * releaseLease(policy, lease.key, lease.leaseId, clock.nowMs(), tables);
 * ```
 */
export function releaseLease(
  policy: LeasePolicy,
  key: string,
  leaseId: string,
  nowMs: number,
  state: DecisionState,
): boolean {
  const set = state.getLeases(policy, key);
  const lease = set?.leases.get(leaseId);
  if (set === undefined || lease === undefined) return false;
  set.leases.delete(leaseId);
  const heldMs = Math.max(0, nowMs - lease.acquiredMs);
  set.ewmaHoldMs =
    set.ewmaHoldMs === undefined
      ? heldMs
      : set.ewmaHoldMs + LEASE_EWMA_ALPHA * (heldMs - set.ewmaHoldMs);
  pruneLeases(set, nowMs);
  // Kept even when empty, so the key's observed hold time survives; stores drop empty sets lazily.
  state.putLeases(policy, key, set);
  return true;
}

/**
 * Extends a live lease by its policy's TTL from `nowMs`. Returns false when the lease is gone
 * (released, or expired as abandoned).
 *
 * @example
 * ```ts
 * renewLease(policy, lease.key, lease.leaseId, clock.nowMs(), tables);
 * ```
 */
export function renewLease(
  policy: LeasePolicy,
  key: string,
  leaseId: string,
  nowMs: number,
  state: DecisionState,
): boolean {
  const lease = state.getLeases(policy, key)?.leases.get(leaseId);
  if (lease === undefined || lease.expiresMs <= nowMs) return false;
  lease.expiresMs = nowMs + policy.leaseTtlMs;
  return true;
}
