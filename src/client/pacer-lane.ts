/**
 * @module pacer-lane
 * A lane of a pacer, one per (agent, caller, method group): the hold a refusal taught, the
 * announced pace, and the calls queued behind it.
 */

import type { Clock } from '../core/clock.js';
import type {
  AnnouncedPolicy,
  AnnouncedState,
  RateLimitInfo,
  RetryHint,
} from '../wire/retry-hint.js';
import { type BudgetOption, RetryBudgetExceededError } from './retry-errors.js';
import type { Sleep } from './sleep.js';

/** How long a call may wait in a lane. @internal */
export interface LaneWaitLimits {
  /** Absolute deadline, ms on the lane's clock (`Infinity` for none). */
  readonly deadlineMs: number;
  /** Longest single wait, ms. */
  readonly maxWaitMs: number;
  /** Abandons the wait (rejects with `signal.reason`). */
  readonly signal?: AbortSignal | undefined;
}

/** What a lane asks of a call's card buckets (its `PacedCall`, pacer.ts). @internal */
export interface LanePlan {
  releaseAtMs(nowMs: number, position?: number): number | undefined;
  contended(nowMs: number): { readonly intervalMs: number } | undefined;
  onRoom(listener: () => void): void;
  begin(nowMs: number): void;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  readonly cleanup: AbortController;
  readonly plan: LanePlan | undefined;
  /** Drawn once, when a contended plan first makes this call wait, ms. */
  jitterMs?: number;
}

/** What a lane needs: time, and for jitter on contended plans a random source and a cap. @internal */
export interface PacerLaneDeps {
  readonly clock: Clock;
  readonly sleep: Sleep;
  /** Uniform in [0, 1). @defaultValue Math.random */
  readonly random?: () => number;
  /** Most jitter on a planned send of a contended plan (at most one interval), ms. @defaultValue 1_000 */
  readonly jitterMs?: number;
}

/**
 * One lane. Calls `acquire()` before their first send and `endSend()` when its response arrived;
 * retries call `retryScheduled()` then `beginRetrySend()`. Answers feed `onRejected` / `onSucceeded`.
 *
 * @internal
 */
export class PacerLane {
  /** The group: a policy name, or a method name until a policy is known. */
  readonly group: string;
  private readonly clock: Clock;
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly jitterCapMs: number;
  private readonly pumpOnRoom = (): void => this.pump();
  /** No first send before this, ms. */
  private wallMs = Number.NEGATIVE_INFINITY;
  /** Sends known to be available now; `undefined` = no estimate (send freely). */
  private tokens: number | undefined;
  /** When `tokens` next grows by one, ms. */
  private nextTokenAtMs = Number.NEGATIVE_INFINITY;
  /** Emission interval from `RateLimit-Policy` (w·1000/q), ms. */
  private intervalMs: number | undefined;
  /** `q`: the most tokens an estimate may hold. */
  private capacity = Number.POSITIVE_INFINITY;
  /** Pace unknown: one send at a time, released as responses come back. */
  private probing = false;
  private inFlight = 0;
  private pendingRetries = 0;
  private lastHint: RetryHint | undefined;
  private readonly waiters: Waiter[] = [];
  private wake: { atMs: number; controller: AbortController } | undefined;

  constructor(group: string, deps: PacerLaneDeps) {
    this.group = group;
    this.clock = deps.clock;
    this.sleep = deps.sleep;
    this.random = deps.random ?? Math.random;
    this.jitterCapMs = Math.max(0, deps.jitterMs ?? 1_000);
  }

  /** Calls waiting for their first send. */
  get queued(): number {
    return this.waiters.length;
  }

  /**
   * Nothing queued, in flight or about to retry, and no wait in force: the lane is the same as no
   * lane and may be dropped.
   */
  isIdle(): boolean {
    const nowMs = this.clock.nowMs();
    return (
      this.waiters.length === 0 &&
      this.inFlight === 0 &&
      this.pendingRetries === 0 &&
      nowMs >= this.wallMs &&
      nowMs >= this.nextTokenAtMs
    );
  }

  /**
   * Waits until this call may be sent (and, with a `plan`, until every planned policy lets it),
   * then counts it in flight. Fails at once with `RetryBudgetExceededError` when the predictable
   * wait does not fit in `limits`; a wait that is not predictable (pace unknown, a concurrency
   * plan full) fails when the deadline or `maxWaitMs` is reached.
   */
  acquire(limits: LaneWaitLimits, plan?: LanePlan): Promise<void> {
    if (limits.signal?.aborted) return Promise.reject(limits.signal.reason);
    const nowMs = this.clock.nowMs();
    if (this.waiters.length === 0 && this.headReleaseAtMs(nowMs, plan) === nowMs) {
      this.take(nowMs, plan);
      return Promise.resolve();
    }
    const estimateMs = this.estimateReleaseMs(nowMs, this.waiters.length, plan);
    const waitMs = estimateMs - nowMs;
    if (waitMs > limits.maxWaitMs || estimateMs > limits.deadlineMs) {
      const refusedBy = waitMs > limits.maxWaitMs ? 'maxSingleWaitMs' : 'budgetMs';
      return Promise.reject(this.budgetError(waitMs, limits.deadlineMs - nowMs, refusedBy));
    }
    return new Promise<void>((resolve, reject) => {
      const cleanup = new AbortController();
      const waiter: Waiter = { resolve, reject, cleanup, plan };
      this.waiters.push(waiter);
      const leave = (error: unknown): void => {
        const i = this.waiters.indexOf(waiter);
        if (i < 0) return;
        this.waiters.splice(i, 1);
        cleanup.abort();
        reject(error);
        this.pump();
      };
      limits.signal?.addEventListener('abort', () => leave(limits.signal?.reason), {
        once: true,
        signal: cleanup.signal,
      });
      const limitMs = Math.min(limits.deadlineMs - nowMs, limits.maxWaitMs);
      if (Number.isFinite(limitMs)) {
        this.sleep(Math.max(0, limitMs), cleanup.signal).then(
          () =>
            leave(
              this.budgetError(
                limitMs,
                limits.deadlineMs - this.clock.nowMs(),
                limitMs === limits.maxWaitMs ? 'maxSingleWaitMs' : 'budgetMs',
              ),
            ),
          () => {},
        );
      }
      this.pump();
    });
  }

  /** A re-send is scheduled (it will not wait in the lane, but it will use a slot). */
  retryScheduled(): void {
    this.pendingRetries++;
  }

  /** A scheduled re-send is abandoned (aborted) before being sent. */
  retryCancelled(): void {
    this.pendingRetries = Math.max(0, this.pendingRetries - 1);
    this.pump();
  }

  /** A scheduled re-send goes out now. */
  beginRetrySend(): void {
    this.pendingRetries = Math.max(0, this.pendingRetries - 1);
    this.inFlight++;
    this.consumeIfKnown(this.clock.nowMs());
  }

  /** Counts a call already sent (through another group's lane) as in flight here. */
  adoptInFlight(): void {
    this.inFlight++;
  }

  /** A send's response (or failure) came back. */
  endSend(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.pump();
  }

  /**
   * A quota or overload rejection: no first send before now + `hint.delayMs`, and the rejected
   * call's own retry will use that slot. `planned`: the policy it names is planned by the calls'
   * plans, which pace from it; the lane then only keeps the wall.
   */
  onRejected(hint: RetryHint, planned = false): void {
    this.lastHint = hint;
    const delayMs = hint.delayMs;
    if (delayMs === undefined || !(delayMs >= 0)) return;
    const nowMs = this.clock.nowMs();
    const slotMs = nowMs + delayMs;
    this.wallMs = Math.max(this.wallMs, slotMs);
    if (planned) {
      this.pump();
      return;
    }
    this.learnPace(hint.policies ?? [], hint.policy);
    this.tokens = 0;
    this.probing = false;
    this.nextTokenAtMs = Math.max(this.nextTokenAtMs, slotMs + (this.intervalMs ?? 0));
    this.pump();
  }

  /**
   * A successful response with its `RateLimit` / `RateLimit-Policy` fields: resynchronises the
   * estimate (r sends now, more after t seconds). Without fields, lets the next probe go.
   */
  onSucceeded(info: RateLimitInfo | undefined): void {
    if (info !== undefined) {
      this.learnPace(info.policies, this.group);
      const state = pickState(info.states, this.group);
      if (state !== undefined && Number.isFinite(state.remaining) && state.remaining >= 0) {
        const nowMs = this.clock.nowMs();
        const resetMs = Math.max(0, state.resetSeconds ?? 0) * 1000;
        // Requests of ours still in flight may be admitted after this count was taken.
        const tokens = Math.max(0, Math.floor(state.remaining) - this.inFlight);
        if (tokens > 0) {
          this.tokens = Math.min(tokens, this.capacity);
          this.nextTokenAtMs = nowMs + resetMs;
          this.probing = false;
        } else if (state.resetSeconds !== undefined || this.intervalMs !== undefined) {
          this.tokens = 0;
          this.nextTokenAtMs = Math.max(this.nextTokenAtMs, nowMs + resetMs);
          this.probing = false;
        }
      }
    }
    this.pump();
  }

  private learnPace(policies: readonly AnnouncedPolicy[], name: string | undefined): void {
    const policy =
      policies.find((p) => p.policy === name) ?? (policies.length === 1 ? policies[0] : undefined);
    if (policy === undefined || policy.unit !== undefined) return; // a token budget is no pace
    if (!(policy.limit > 0) || !(policy.windowSeconds > 0)) return;
    this.intervalMs = (policy.windowSeconds * 1000) / policy.limit;
    this.capacity = policy.limit;
  }

  /** Brings a token estimate up to `nowMs` at the known pace. */
  private refill(nowMs: number): void {
    if (this.tokens === undefined || this.intervalMs === undefined) return;
    if (nowMs < this.nextTokenAtMs || this.tokens >= this.capacity) return;
    const grown = Math.floor((nowMs - this.nextTokenAtMs) / this.intervalMs) + 1;
    this.tokens = Math.min(this.capacity, this.tokens + grown);
    this.nextTokenAtMs += grown * this.intervalMs;
  }

  /** The time the head of the queue may go, or `undefined` while waiting for a response. */
  private releaseAtMs(nowMs: number): number | undefined {
    const notBeforeMs = Math.max(nowMs, this.wallMs);
    if (this.probing) return this.inFlight + this.pendingRetries === 0 ? notBeforeMs : undefined;
    if (this.tokens === undefined) return notBeforeMs;
    this.refill(nowMs);
    if (this.tokens > 0) return notBeforeMs;
    if (this.intervalMs !== undefined || nowMs < this.nextTokenAtMs) {
      return Math.max(notBeforeMs, this.nextTokenAtMs);
    }
    // The announced wait is over but the pace is unknown: probe one at a time.
    this.tokens = undefined;
    this.probing = true;
    return this.inFlight + this.pendingRetries === 0 ? notBeforeMs : undefined;
  }

  /**
   * When the head may go, with its plan (`undefined`: waiting for an answer); with `waiter`, a
   * contended plan's wait gets that waiter's jitter on top.
   */
  private headReleaseAtMs(
    nowMs: number,
    plan: LanePlan | undefined,
    waiter?: Waiter,
  ): number | undefined {
    const laneAtMs = this.releaseAtMs(nowMs);
    if (laneAtMs === undefined || plan === undefined) return laneAtMs;
    const planAtMs = plan.releaseAtMs(nowMs);
    if (planAtMs === undefined) {
      plan.onRoom(this.pumpOnRoom);
      return undefined;
    }
    if (planAtMs <= nowMs || waiter === undefined) return Math.max(laneAtMs, planAtMs);
    const contended = plan.contended(nowMs);
    if (waiter.jitterMs === undefined && contended !== undefined) {
      waiter.jitterMs = this.random() * Math.min(contended.intervalMs, this.jitterCapMs);
    }
    return Math.max(laneAtMs, planAtMs + (waiter.jitterMs ?? 0));
  }

  /** Predictable release time of the waiter at `position` (0 = head), ms. */
  private estimateReleaseMs(nowMs: number, position: number, plan: LanePlan | undefined): number {
    const planAtMs = plan?.releaseAtMs(nowMs, position) ?? nowMs;
    const notBeforeMs = Math.max(nowMs, this.wallMs, planAtMs);
    if (this.probing || this.tokens === undefined) return notBeforeMs;
    this.refill(nowMs);
    if (this.tokens > position) return notBeforeMs;
    const behind = position - this.tokens;
    return Math.max(notBeforeMs, this.nextTokenAtMs + behind * (this.intervalMs ?? 0));
  }

  private take(nowMs: number, plan: LanePlan | undefined): void {
    this.inFlight++;
    this.consumeIfKnown(nowMs);
    plan?.begin(nowMs);
  }

  private consumeIfKnown(nowMs: number): void {
    if (this.tokens === undefined) return;
    this.refill(nowMs);
    if (this.tokens >= this.capacity && this.intervalMs !== undefined) {
      this.nextTokenAtMs = nowMs + this.intervalMs;
    }
    this.tokens = Math.max(0, this.tokens - 1);
  }

  private pump(): void {
    const nowMs = this.clock.nowMs();
    while (this.waiters.length > 0) {
      const head = this.waiters[0] as Waiter;
      const atMs = this.headReleaseAtMs(nowMs, head.plan, head);
      if (atMs === undefined) return;
      if (atMs > nowMs) {
        this.scheduleWake(atMs);
        return;
      }
      this.waiters.shift();
      head.cleanup.abort();
      this.take(nowMs, head.plan);
      head.resolve();
    }
    // Queue drained: an unknown pace stops mattering until the next rejection.
    this.probing = false;
  }

  private scheduleWake(atMs: number): void {
    if (this.wake !== undefined && this.wake.atMs <= atMs) return;
    this.wake?.controller.abort();
    const controller = new AbortController();
    this.wake = { atMs, controller };
    this.sleep(atMs - this.clock.nowMs(), controller.signal).then(
      () => {
        if (this.wake?.controller === controller) this.wake = undefined;
        this.pump();
      },
      () => {},
    );
  }

  private budgetError(
    requiredWaitMs: number,
    remainingMs: number,
    refusedBy: BudgetOption,
  ): RetryBudgetExceededError {
    const hint: RetryHint = this.lastHint ?? {
      kind: 'quota',
      delayMs: requiredWaitMs,
      delaySource: 'ratelimit',
      policy: this.group,
    };
    return new RetryBudgetExceededError(hint, {
      attempts: 0,
      requiredWaitMs,
      remainingMs,
      refusedBy,
    });
  }
}

function pickState(states: readonly AnnouncedState[], group: string): AnnouncedState | undefined {
  // States in another unit (`qu`, e.g. tokens left) are not requests left.
  const named = states.find((s) => s.policy === group && s.unit === undefined);
  if (named !== undefined) return named;
  // Otherwise the state closest to exhaustion speaks for the group.
  let lowest: AnnouncedState | undefined;
  for (const s of states) {
    if (s.unit === undefined && (lowest === undefined || s.remaining < lowest.remaining))
      lowest = s;
  }
  return lowest;
}
