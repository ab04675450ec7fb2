/**
 * @module pacer
 * `Pacer`: how fast one caller may send to one agent — the card's buckets and the holds learned
 * from answers, each policy paced by one of them.
 */

import type { CardPolicy } from '../wire/rate-limit-card.js';
import type { RateLimitInfo, RetryHint } from '../wire/retry-hint.js';
import { type LanePlan, type LaneWaitLimits, PacerLane, type PacerLaneDeps } from './pacer-lane.js';
import { ConcurrencyPlan, RatePlan } from './policy-plan.js';

/**
 * Lanes (method groups) per pacer, policies planned per call, and learned method → policy
 * mappings per pacer, at most: an agent naming ever new policies, or a card listing thousands,
 * cannot mint state.
 *
 * @example
 * ```ts
 * table.planFor(agent, caller, 'SendMessage')?.rates.length; // ≤ MAX_POLICIES_PER_PACER
 * ```
 */
export const MAX_POLICIES_PER_PACER = 32;

/** The lane that policies past {@link MAX_POLICIES_PER_PACER} share. */
const OVERFLOW_GROUP = '(overflow)';

/** Scopes whose bucket belongs to one caller (per method for `caller+method`). */
const PLANNED_SCOPES: ReadonlySet<string> = new Set(['caller', 'caller+method']);

/**
 * What a pacer needs of the table holding it: the lanes' time sources, and the one bound.
 *
 * @internal
 */
export interface PacerHost {
  readonly deps: PacerLaneDeps;
  /** An entry (lane or bucket) is about to be added: the table may drop idle ones of other pacers. */
  makeRoom(except: Pacer): void;
  /** Entries were added (positive) or dropped (negative). */
  counted(delta: number): void;
}

/**
 * One caller's pacing towards one agent: the card's buckets and the learned holds.
 *
 * @internal
 * @example
 * ```ts
 * const call = await pacer.start('SendMessage', cardPolicies, { deadlineMs, maxWaitMs: 60_000 });
 * ```
 */
export class Pacer {
  /** The agent this pacer sends to. */
  readonly agent: string;
  private readonly host: PacerHost;
  private readonly lanes = new Map<string, PacerLane>();
  private readonly buckets = new Map<string, RatePlan | ConcurrencyPlan>();
  /** The policy last seen limiting a method: its calls queue in that policy's lane. */
  private readonly policyByMethod = new Map<string, string>();

  constructor(agent: string, host: PacerHost) {
    this.agent = agent;
    this.host = host;
  }

  /** Entries kept: lanes and buckets. */
  get size(): number {
    return this.lanes.size + this.buckets.size;
  }

  /** Calls waiting for their first send. */
  get waiting(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.queued;
    return n;
  }

  /** Nothing queued, in flight, about to retry or held back: a fresh pacer would do the same. */
  isIdle(): boolean {
    const nowMs = this.host.deps.clock.nowMs();
    for (const lane of this.lanes.values()) if (!lane.isIdle()) return false;
    for (const bucket of this.buckets.values()) if (!bucket.isIdle(nowMs)) return false;
    return true;
  }

  /** Drops idle lanes and buckets (a live one stays). */
  prune(): void {
    const nowMs = this.host.deps.clock.nowMs();
    const before = this.size;
    for (const [group, lane] of this.lanes) if (lane.isIdle()) this.lanes.delete(group);
    for (const [k, bucket] of this.buckets) if (bucket.isIdle(nowMs)) this.buckets.delete(k);
    this.host.counted(this.size - before);
  }

  /**
   * The buckets a call of `method` must satisfy, from the card's `policies` (`undefined`: no
   * card, or no caller-scoped policy of the card names the method).
   */
  planFor(method: string, policies: readonly CardPolicy[] | undefined): CallBuckets | undefined {
    if (policies === undefined) return undefined;
    const rates: RatePlan[] = [];
    const concurrency: ConcurrencyPlan[] = [];
    for (const p of policies) {
      if (!PLANNED_SCOPES.has(p.scope) || !(p.methods as readonly string[]).includes(method)) {
        continue;
      }
      // A usage budget (tokens) is not paced by requests: its refusals still come as hints.
      if (p.kind === 'rate' && p.unit !== undefined) continue;
      const bucket = this.bucketOf(
        p.scope === 'caller+method' ? `${p.name}\u0000${method}` : p.name,
        p,
      );
      if (bucket instanceof RatePlan) rates.push(bucket);
      else concurrency.push(bucket);
      if (rates.length + concurrency.length === MAX_POLICIES_PER_PACER) break;
    }
    return rates.length + concurrency.length === 0 ? undefined : { rates, concurrency };
  }

  /**
   * Waits until a call of `method` may be sent (its lane's hold, and its buckets from the card's
   * `policies`), then counts it sent. Rejects with `RetryBudgetExceededError` when the wait does
   * not fit in `limits`, or with the abort reason.
   */
  async start(
    method: string,
    policies: readonly CardPolicy[] | undefined,
    limits: LaneWaitLimits,
  ): Promise<PacedCall> {
    const buckets = this.planFor(method, policies);
    const lane = this.laneFor(this.policyByMethod.get(method) ?? method);
    const call = new PacedCall(this, method, lane, buckets);
    await lane.acquire(limits, buckets === undefined ? undefined : call);
    return call;
  }

  /** Now on the pacer's clock, ms. */
  nowMs(): number {
    return this.host.deps.clock.nowMs();
  }

  /** `policy` limits `method`: its calls queue in that policy's lane from now on, returned. */
  learnPolicy(method: string, policy: string): PacerLane {
    this.policyByMethod.delete(method);
    this.policyByMethod.set(method, policy);
    for (const [m, p] of this.policyByMethod) {
      if (this.policyByMethod.size <= MAX_POLICIES_PER_PACER) break;
      if (m !== method && !this.isLive(p)) this.policyByMethod.delete(m);
    }
    return this.laneFor(policy);
  }

  /**
   * The lane of a group, created on first use. A new group when this pacer has
   * {@link MAX_POLICIES_PER_PACER} lanes that are not idle, or while its overflow lane holds a
   * wait, gets the overflow lane.
   */
  private laneFor(group: string): PacerLane {
    const own = this.lanes.get(group);
    if (own !== undefined) return own;
    if (this.lanes.size >= MAX_POLICIES_PER_PACER) this.prune();
    const overflow = this.lanes.get(OVERFLOW_GROUP);
    const full = this.lanes.size >= MAX_POLICIES_PER_PACER;
    if (overflow !== undefined && (full || !overflow.isIdle())) return overflow;
    const name = full ? OVERFLOW_GROUP : group;
    this.host.makeRoom(this);
    const lane = new PacerLane(name, this.host.deps);
    this.lanes.set(name, lane);
    this.host.counted(1);
    return lane;
  }

  /** Whether the lane a policy's calls queue in (its own, or the overflow) holds a wait. */
  private isLive(policy: string): boolean {
    const lane = this.lanes.get(policy) ?? this.lanes.get(OVERFLOW_GROUP);
    return lane !== undefined && !lane.isIdle();
  }

  /** A card bucket, created on first use, retuned when the card's numbers changed. */
  private bucketOf(k: string, p: CardPolicy): RatePlan | ConcurrencyPlan {
    const existing = this.buckets.get(k);
    let bucket: RatePlan | ConcurrencyPlan;
    if (p.kind === 'rate') {
      bucket = existing instanceof RatePlan ? existing : new RatePlan(p);
      bucket.publish(p);
    } else {
      bucket = existing instanceof ConcurrencyPlan ? existing : new ConcurrencyPlan(p.name, p.max);
      bucket.publish(p.max);
    }
    if (bucket !== existing) {
      if (existing === undefined) {
        this.host.makeRoom(this);
        this.host.counted(1);
      }
      this.buckets.set(k, bucket);
    }
    return bucket;
  }
}

/**
 * The card's buckets one call must satisfy (what {@link Pacer.planFor} finds for it).
 *
 * @internal
 */
export interface CallBuckets {
  readonly rates: readonly RatePlan[];
  readonly concurrency: readonly ConcurrencyPlan[];
}

/**
 * One call under its pacer, from its first send to its end: its lane (the hold it waits behind)
 * and its card buckets. The lane asks it when the buckets let it go ({@link LanePlan}); the
 * scheduler reports what came back, and each `RateLimit` item or refusal reaches the one thing
 * pacing its policy: the call's bucket of that name, else the lane.
 *
 * @internal
 */
export class PacedCall implements LanePlan, CallBuckets {
  readonly rates: readonly RatePlan[];
  readonly concurrency: readonly ConcurrencyPlan[];
  private readonly pacer: Pacer;
  private readonly method: string;
  private lane: PacerLane;
  /** The call has card buckets (without, only its lane paces it). */
  private readonly planned: boolean;
  /** When the current send left (set by {@link begin}), ms. */
  private sentAtMs = Number.NaN;

  constructor(pacer: Pacer, method: string, lane: PacerLane, buckets: CallBuckets | undefined) {
    this.pacer = pacer;
    this.method = method;
    this.lane = lane;
    this.rates = buckets?.rates ?? [];
    this.concurrency = buckets?.concurrency ?? [];
    this.planned = buckets !== undefined;
  }

  /** Whether the card publishes a bucket of this policy for the call. */
  covers(policy: string | undefined): boolean {
    return (
      policy !== undefined &&
      (this.rates.some((p) => p.policy === policy) ||
        this.concurrency.some((p) => p.policy === policy))
    );
  }

  /** A rate bucket that makes calls wait is contended: its slots may be wanted by others too. */
  contended(nowMs: number): { readonly intervalMs: number } | undefined {
    for (const p of this.rates) if (p.contended && p.conformAtMs(nowMs) > nowMs) return p;
    return undefined;
  }

  /**
   * When the send `position` places behind the next one may go by the rate buckets, ms;
   * `undefined` while a concurrency bucket is full (it frees when an answer comes back).
   */
  releaseAtMs(nowMs: number, position = 0): number | undefined {
    if (position === 0 && this.concurrency.some((p) => !p.hasRoom())) return undefined;
    let atMs = nowMs;
    for (const p of this.rates) atMs = Math.max(atMs, p.conformAtMs(nowMs, position));
    return atMs;
  }

  /** Calls `listener` once when a full concurrency bucket frees room. */
  onRoom(listener: () => void): void {
    for (const p of this.concurrency) if (!p.hasRoom()) p.onRoom(listener);
  }

  /** A send leaves now, counted in every bucket; `heldBy`: the policy whose held slot it claims. */
  begin(nowMs: number, heldBy?: string): void {
    this.sentAtMs = nowMs;
    for (const p of this.rates) p.sent(nowMs, p.policy !== heldBy);
    for (const p of this.concurrency) p.begin();
  }

  /** The send failed without an answer (a thrown error): the call ends. */
  failed(): void {
    if (this.planned) this.settle(this.pacer.nowMs(), undefined);
    this.lane.endSend();
  }

  /**
   * A successful answer: the buckets take its `RateLimit` items, the lane those no bucket of this
   * call follows. `busyUntil`: the call occupies the agent until then (a stream).
   */
  answered(rateLimit: RateLimitInfo | undefined, busyUntil?: Promise<unknown>): void {
    if (this.planned) this.settle(this.pacer.nowMs(), rateLimit, busyUntil);
    this.lane.onSucceeded(this.forLane(rateLimit));
    this.lane.endSend();
  }

  /**
   * A failed answer, before the retry rules decide. A refusal (quota, overload) holds back the
   * calls not yet sent: by the bucket of the policy it names when the card publishes one for the
   * call, and in that policy's lane (this method's calls queue there from now on).
   */
  refused(hint: RetryHint): void {
    const limited = hint.kind === 'quota' || hint.kind === 'overload';
    if (this.planned) {
      const nowMs = this.pacer.nowMs();
      this.settle(nowMs, hint);
      for (const p of this.rates) {
        if (limited && hint.delayMs !== undefined && p.policy === hint.policy) {
          p.onRejected(hint.delayMs, hint.reserved === true, nowMs);
        }
      }
    }
    if (!limited) return;
    if (hint.policy !== undefined) {
      const named = this.pacer.learnPolicy(this.method, hint.policy);
      if (named !== this.lane) {
        this.lane.endSend();
        named.adoptInFlight(); // counted in flight in its real group
        this.lane = named;
      }
    }
    this.lane.onRejected(hint, this.planned && this.covers(hint.policy));
  }

  /** The retry rules stopped: the call ends. */
  stopped(): void {
    this.lane.endSend();
  }

  /** A re-send is scheduled: it will not queue, but it will use a slot. */
  retryScheduled(): void {
    this.lane.retryScheduled();
    this.lane.endSend();
  }

  /** The scheduled re-send was abandoned (aborted). */
  retryCancelled(): void {
    this.lane.retryCancelled();
  }

  /** The re-send leaves now; it claims the slot `hint` says was held for it, if any. */
  resend(hint: RetryHint): void {
    this.lane.beginRetrySend();
    if (this.planned) {
      this.begin(this.pacer.nowMs(), hint.reserved === true ? hint.policy : undefined);
    }
  }

  /**
   * The send is over: the rate buckets read what came back (`limits`, none when it failed), and
   * concurrency room frees now, or when `busyUntil` settles.
   */
  private settle(
    nowMs: number,
    limits: RateLimitInfo | RetryHint | undefined,
    busyUntil?: Promise<unknown>,
  ): void {
    for (const p of this.rates) p.settled(this.sentAtMs, nowMs, limits);
    const release = (): void => {
      for (const p of this.concurrency) p.end();
    };
    if (busyUntil === undefined) release();
    else busyUntil.then(release, release);
  }

  /** What the lane's own pacing still needs: the `RateLimit` items no bucket of this call follows. */
  private forLane(info: RateLimitInfo | undefined): RateLimitInfo | undefined {
    if (info === undefined || !this.planned) return info;
    const states = info.states.filter((s) => !this.covers(s.policy));
    if (states.length === info.states.length) return info;
    if (states.length === 0) return undefined;
    return { policies: info.policies.filter((p) => !this.covers(p.policy)), states };
  }
}
