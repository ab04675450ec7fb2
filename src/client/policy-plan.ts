/**
 * @module policy-plan
 * What a planning client keeps per published policy and caller: a GCRA mirror (`RatePlan`) and an
 * in-flight count (`ConcurrencyPlan`).
 */

import type { CardRatePolicy, CardRateTier } from '../wire/rate-limit-card.js';
import type { AnnouncedPolicy, AnnouncedState } from '../wire/retry-hint.js';

/** Safety on top of a computed conforming instant, µs (float rounding of large ms values). */
const CONFORM_MARGIN_US = 1;

/**
 * `RateLimit` / `RateLimit-Policy` items as an answer carried them (a success's headers, or a
 * rejection's hint).
 */
export interface AnsweredLimits {
  readonly policies?: readonly AnnouncedPolicy[] | undefined;
  readonly states?: readonly AnnouncedState[] | undefined;
}

/**
 * The client's mirror of one caller-scoped rate policy (GCRA: a theoretical arrival time `tat`,
 * in integer microseconds as the agent decides;
 * a send conforms at `tat − τ`). Exact while this client is the only one using the identity: the
 * agent's bucket moves only with our sends, and a send never arrives before it leaves. A send
 * that finds the bucket full restarts it at the agent's decision, which comes after the send by
 * the request's latency (a cold first connection's included): the first answer after it bounds
 * that decision, and the bucket is moved to start there. Safe while answers come back within one
 * interval; slower answers (long blocking tasks at a fast rate) may let the send after a burst
 * go by up to the first request's extra latency too early, and its hint corrects the plan. Answers
 * correct it: a `RateLimit` item proving the bucket is emptier than our sends explain (another
 * process, a shared identity, a policy that changed) moves it later; one proving it fuller moves
 * it earlier when it answered our only send in flight. A rejection by it, or an answer proving
 * someone else draws on it, marks it contended.
 *
 * @example
 * ```ts
 * const plan = new RatePlan({ kind: 'rate', name: 'per-caller', scope: 'caller', methods: ['SendMessage'], limit: 60, windowSeconds: 60, burst: 10, tiers: [] });
 * plan.conformAtMs(0, 10); // 1_000.001: the 11th send of a burst waits one interval
 * ```
 */
export class RatePlan {
  readonly policy: string;
  private emissionUs = 0;
  private toleranceUs = 0;
  private burst = 1;
  private limit = 0;
  private windowSeconds = 0;
  private tiers: readonly CardRateTier[] = [];
  /** The burst the card published (a retune never plans a larger one without a tier saying so). */
  private publishedBurst = 1;
  /** The card's numbers last applied (a card seen again does not undo what answers taught). */
  private published = '';
  private tatUs = Number.NEGATIVE_INFINITY;
  private contendedFlag = false;
  /** When each of our unanswered sends under this plan left, ms, and its place among our charged sends. */
  private readonly outstanding: { readonly atMs: number; readonly seq: number }[] = [];
  /** The last send that left while nothing else of ours was unanswered, ms. */
  private aloneSentAtMs = Number.NaN;
  /** Charged sends so far (their sequence numbers). */
  private chargedSeq = 0;
  /**
   * The first charged send that found the bucket full as far as we know, while no answer has
   * told when the agent decided it: the agent's bucket restarts at that decision, not at our send.
   */
  private restartSeq: number | undefined;

  constructor(published: CardRatePolicy) {
    this.policy = published.name;
    this.publish(published);
  }

  /** Applies the card's numbers for this policy when they differ from the card's last ones. */
  publish(published: CardRatePolicy): void {
    const numbers = `${published.limit}/${published.windowSeconds}/${published.burst}`;
    this.tiers = published.tiers;
    if (numbers === this.published) return;
    this.published = numbers;
    this.publishedBurst = published.burst;
    this.tune(published.limit, published.windowSeconds, published.burst);
  }

  /** The emission interval T, ms. */
  get intervalMs(): number {
    return this.emissionUs / 1000;
  }

  /** Someone else draws on this bucket too (a rejection or an answer said so). */
  get contended(): boolean {
    return this.contendedFlag;
  }

  /** Full as far as we know and nothing unanswered: the plan holds nothing a fresh one would not. */
  isIdle(nowMs: number): boolean {
    return this.outstanding.length === 0 && this.tatUs <= Math.floor(nowMs * 1000);
  }

  /**
   * When the send `position` places behind the next one (0 = the next) conforms, ms (never
   * before `nowMs`).
   */
  conformAtMs(nowMs: number, position = 0): number {
    const nowUs = Math.floor(nowMs * 1000);
    const tatUs = Math.max(this.tatUs, nowUs);
    const atUs = tatUs + position * this.emissionUs - this.toleranceUs;
    return atUs <= nowUs ? nowMs : (atUs + CONFORM_MARGIN_US) / 1000;
  }

  /** A send leaves now; `charge`: the agent will charge it (false: it claims a held slot). */
  sent(nowMs: number, charge = true): void {
    this.aloneSentAtMs = this.outstanding.length === 0 ? nowMs : Number.NaN;
    if (charge) this.chargedSeq++;
    this.outstanding.push({ atMs: nowMs, seq: this.chargedSeq });
    if (!charge) return;
    const nowUs = Math.floor(nowMs * 1000);
    // A full bucket restarts at the agent's decision, some time after this send left.
    if (this.tatUs <= nowUs && this.restartSeq === undefined) this.restartSeq = this.chargedSeq;
    this.tatUs = Math.max(this.tatUs, nowUs) + this.emissionUs;
  }

  /**
   * The send that left at `sentAtMs` is over; when it was answered, `limits` is what the answer
   * said: `RateLimit-Policy` retunes q/w (and the burst of the tier it matches), the `RateLimit`
   * item (r, t) checks the mirror.
   */
  settled(sentAtMs: number, nowMs: number, limits?: AnsweredLimits): void {
    const i = this.outstanding.findIndex((o) => o.atMs === sentAtMs);
    const settledSeq = i >= 0 ? (this.outstanding[i] as { seq: number }).seq : this.chargedSeq;
    if (i >= 0) this.outstanding.splice(i, 1);
    this.bindRestart(settledSeq, nowMs);
    if (limits !== undefined) this.onAnswer(limits, sentAtMs, nowMs);
  }

  /**
   * A send at or after the restart is over by `nowMs`, so the agent decided the first of them
   * no later than `nowMs`: the bucket restarted by then (not at our send, which left earlier by
   * the whole latency of that first request — a cold connection's included), and holds every
   * charged send from the restart on. Without this the send after a burst goes one first-request
   * latency too early.
   */
  private bindRestart(settledSeq: number, nowMs: number): void {
    const restartSeq = this.restartSeq;
    if (restartSeq === undefined || settledSeq < restartSeq) return;
    this.restartSeq = undefined;
    const chargedSince = this.chargedSeq - restartSeq + 1;
    const latestUs = Math.floor(nowMs * 1000) + chargedSince * this.emissionUs;
    this.tatUs = Math.max(this.tatUs, latestUs);
  }

  /**
   * The agent announces other q/w than the plan's: a policy that changed, or the caller's own
   * tier. The burst is the tier's when a card tier has these numbers, else the one keeping the
   * same tolerance in time (never more than the card's); sends not yet drained are re-priced.
   */
  private retune(limit: number, windowSeconds: number, nowMs: number): void {
    const tier = this.tiers.find((t) => t.limit === limit && t.windowSeconds === windowSeconds);
    const oldEmissionUs = this.emissionUs;
    const oldToleranceUs = this.toleranceUs;
    const emissionUs = Math.ceil((windowSeconds * 1_000_000) / limit);
    const burst =
      tier?.burst ?? Math.min(this.publishedBurst, 1 + Math.floor(oldToleranceUs / emissionUs));
    const nowUs = Math.floor(nowMs * 1000);
    if (this.tatUs > nowUs) {
      this.tatUs = nowUs + Math.ceil(((this.tatUs - nowUs) * emissionUs) / oldEmissionUs);
    }
    this.tune(limit, windowSeconds, burst);
  }

  private onAnswer(limits: AnsweredLimits, sentAtMs: number, nowMs: number): void {
    // Items in another unit (`qu`, a token budget) say nothing about this request plan.
    const announced = limits.policies?.find(
      (p) => p.policy === this.policy && p.unit === undefined,
    );
    if (
      announced !== undefined &&
      (announced.limit !== this.limit || announced.windowSeconds !== this.windowSeconds)
    ) {
      this.retune(announced.limit, announced.windowSeconds, nowMs);
    }
    const state = limits.states?.find((s) => s.policy === this.policy && s.unit === undefined);
    if (state === undefined || !Number.isFinite(state.remaining) || state.remaining < 0) return;
    const r = Math.floor(state.remaining);
    const t = Math.max(0, Math.ceil(state.resetSeconds ?? 0));
    const nowUs = Math.floor(nowMs * 1000);
    // Decided at some d in [sent, now]. r < burst: tat(d) ∈ (d + τ − rT + (t − 1)s, d + τ − rT + t s];
    // r ≥ burst: the bucket was full, tat(d) ≤ d.
    const full = r >= this.burst;
    const lowerUs = full
      ? Number.NEGATIVE_INFINITY
      : Math.floor(sentAtMs * 1000) +
        this.toleranceUs -
        r * this.emissionUs +
        Math.max(0, t - 1) * 1_000_000;
    const upperUs = full ? nowUs : nowUs + this.toleranceUs - r * this.emissionUs + t * 1_000_000;
    if (lowerUs > this.tatUs) {
      // Emptier than our own sends explain: someone else draws on it. Take the latest the agent
      // may be at, plus ours that may not have been counted yet.
      this.contendedFlag = true;
      const sentAfter = this.outstanding.filter((o) => o.atMs > sentAtMs).length;
      this.tatUs = Math.max(this.tatUs, upperUs + sentAfter * this.emissionUs);
    } else if (
      this.outstanding.length === 0 &&
      sentAtMs === this.aloneSentAtMs &&
      upperUs < this.tatUs
    ) {
      // Fuller than we thought, and this send was our only one in flight: the answer counted
      // every send of ours, and none was decided after it.
      this.tatUs = upperUs;
    }
  }

  /**
   * A rejection by this policy, `delayMs` from `nowMs`: nothing new conforms before the named slot,
   * and when the agent `reserved` it for the rejected call, not before the slot after it.
   */
  onRejected(delayMs: number, reserved: boolean, nowMs: number): void {
    this.contendedFlag = true;
    const slotUs = Math.floor(nowMs * 1000) + Math.ceil(delayMs * 1000);
    const afterUs = slotUs + this.toleranceUs + (reserved ? this.emissionUs : 0);
    this.tatUs = Math.max(this.tatUs, afterUs);
  }

  private tune(limit: number, windowSeconds: number, burst: number): void {
    this.limit = limit;
    this.windowSeconds = windowSeconds;
    this.burst = Math.max(1, burst);
    // T rounded up to a whole µs, the agent's own rule: never faster than the agent counts.
    this.emissionUs = Math.ceil((windowSeconds * 1_000_000) / limit);
    this.toleranceUs = (this.burst - 1) * this.emissionUs;
  }
}

/**
 * The client's count of its calls in flight under one caller-scoped concurrency policy.
 *
 * @example
 * ```ts
 * const plan = new ConcurrencyPlan('tasks-per-caller', 5);
 * plan.hasRoom(); // true until 5 are in flight
 * ```
 */
export class ConcurrencyPlan {
  readonly policy: string;
  private maxInFlight: number;
  private inFlightCount = 0;
  private readonly listeners = new Set<() => void>();

  constructor(policy: string, max: number) {
    this.policy = policy;
    this.maxInFlight = max;
  }

  /** Most calls in flight at once. */
  get max(): number {
    return this.maxInFlight;
  }

  /** Applies the card's `max` (a larger one frees room at once). */
  publish(max: number): void {
    if (max === this.maxInFlight) return;
    const grew = max > this.maxInFlight;
    this.maxInFlight = max;
    if (grew) this.notify();
  }

  /** Nothing in flight: the plan holds nothing a fresh one would not (`_nowMs` for symmetry). */
  isIdle(_nowMs?: number): boolean {
    return this.inFlightCount === 0 && this.listeners.size === 0;
  }

  /** Calls in flight. */
  get inFlight(): number {
    return this.inFlightCount;
  }

  /** One more may be sent now. */
  hasRoom(): boolean {
    return this.inFlightCount < this.max;
  }

  /** A call is sent. */
  begin(): void {
    this.inFlightCount++;
  }

  /** A call's answer came back (or it ended otherwise): waiters are told once. */
  end(): void {
    this.inFlightCount = Math.max(0, this.inFlightCount - 1);
    this.notify();
  }

  /** Calls `listener` once, at the next {@link end}. */
  onRoom(listener: () => void): void {
    this.listeners.add(listener);
  }

  private notify(): void {
    const waiting = [...this.listeners];
    this.listeners.clear();
    for (const listener of waiting) listener();
  }
}
