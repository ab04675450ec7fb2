/**
 * @module retry-scheduler
 * `RetryScheduler`: runs one A2A call, transport-agnostic, under its (agent, caller) pacer and
 * re-sends it unchanged by the retry rules.
 */

import type { Clock } from '../core/clock.js';
import { systemClock } from '../platform/system-clock.js';
import { readRateLimitCard } from '../wire/rate-limit-card.js';
import type { RateLimitInfo, RetryHint } from '../wire/retry-hint.js';
import { agentCardTargets } from './agent-card-targets.js';
import { PacerTable } from './pacer-table.js';
import {
  DEFAULT_RETRY_RULES,
  isHintedRefusal,
  planRetry,
  type RetryRules,
  type StopReason,
} from './plan-retry.js';
import {
  AgentOverloadedError,
  RateLimitedError,
  RetryBudgetExceededError,
} from './retry-errors.js';
import { type Sleep, systemSleep } from './sleep.js';

/**
 * Options of {@link RetryScheduler}: the retry rules plus the caller's default budget and the
 * injectable time sources. All durations in milliseconds.
 *
 * @example
 * ```ts
 * const scheduler = new RetryScheduler({ budgetMs: 30_000, maxSingleWaitMs: 20_000, agentDeduplicates: true });
 * ```
 */
export interface RetrySchedulerOptions extends Partial<RetryRules> {
  /** Total time one call may take, first send to last response, unless the call sets `deadlineMs`. @defaultValue 120_000 */
  readonly budgetMs?: number;
  /**
   * Pacing entries kept at most (each (agent, caller) pacer's lanes and card buckets; idle ones
   * are dropped first, a live wait never); also bounds the cards. @defaultValue 1_000
   */
  readonly maxGates?: number;
  /**
   * Plan first sends from the policies an agent's card publishes, once a card is learned.
   * `false`: cards are ignored and only rejections and `RateLimit` answers pace calls. @defaultValue true
   */
  readonly planFromCard?: boolean;
  /** Time source. @defaultValue systemClock */
  readonly clock?: Clock;
  /** Waits between attempts and in the pacers. @defaultValue systemSleep */
  readonly sleep?: Sleep;
  /** Uniform in [0, 1), for jitter and backoff. @defaultValue Math.random */
  readonly random?: () => number;
}

/**
 * One call as the scheduler sees it.
 */
export interface ScheduledCall {
  /** Which agent (e.g. the URL origin); pacing is per agent. */
  readonly agent: string;
  /** The caller identity the agent limits by (e.g. the credentials); pacing is per caller. */
  readonly caller: string;
  /** The A2A method (decides whether transient failures may be retried). */
  readonly method: string;
  /** Cancels the call, including any wait. */
  readonly signal?: AbortSignal | undefined;
  /** Absolute deadline, ms on the scheduler's clock; the earlier of this and now + `budgetMs` applies. */
  readonly deadlineMs?: number | undefined;
  /**
   * The request may be repeated after an unknown outcome (a 500/502/504, a reset connection)
   * whatever `method` says, e.g. a webhook POST. @defaultValue false
   */
  readonly repeatable?: boolean | undefined;
}

/**
 * What one attempt produced: a value to hand back, or a failure with its hint. `failure` is what
 * the caller gets when the scheduler stops without a typed error: the transport's own response
 * (`{ value }`) or error (`{ error }`), unchanged.
 */
export type AttemptOutcome<T> =
  | {
      readonly ok: true;
      readonly value: T;
      readonly rateLimit?: RateLimitInfo | undefined;
      /**
       * The call still occupies the agent after this answer (a stream) until this settles; a
       * concurrency plan counts it in flight until then. @defaultValue the answer ends it
       */
      readonly busyUntil?: Promise<unknown> | undefined;
    }
  | {
      readonly ok: false;
      readonly hint: RetryHint;
      readonly failure: { readonly value: T } | { readonly error: unknown };
    };

/**
 * Sends one attempt. `attemptIndex` is 0 for the first send. Must send the identical request every
 * time and must not throw for failures it can describe (a thrown error ends the call as is).
 */
export type Attempt<T> = (attemptIndex: number) => Promise<AttemptOutcome<T>>;

/**
 * Counters of a scheduler, for tests and metrics.
 *
 * @example
 * ```ts
 * scheduler.stats.retries; // re-sends so far
 * ```
 */
export interface RetrySchedulerStats {
  /** Requests sent (first sends and re-sends). */
  sends: number;
  /** Re-sends. */
  retries: number;
  /** Calls that ended with a failure (typed error, or the transport's own). */
  failedCalls: number;
}

/**
 * Runs calls with the client's retry rules and a shared pacer per (agent, caller). Share one
 * scheduler between all the transports of a process so that they share what they learn.
 *
 * @example
 * ```ts
 * const scheduler = new RetryScheduler({ budgetMs: 60_000 });
 * const response = await scheduler.run(
 *   { agent: 'https://agent.example', caller: 'me', method: 'GetTask' },
 *   async () => toOutcome(await fetch(url)),
 * );
 * ```
 */
export class RetryScheduler {
  /** The rules in force (defaults filled in). */
  readonly rules: RetryRules;
  /** Default total budget per call, ms. */
  readonly budgetMs: number;
  /**
   * The pacers, one per (agent, caller): the cards' buckets and the learned holds.
   *
   * @internal
   */
  readonly pacers: PacerTable;
  /** Counters. */
  readonly stats: RetrySchedulerStats = { sends: 0, retries: 0, failedCalls: 0 };
  private readonly clock: Clock;
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly planFromCard: boolean;

  constructor(options: RetrySchedulerOptions = {}) {
    this.rules = {
      maxRetries: options.maxRetries ?? DEFAULT_RETRY_RULES.maxRetries,
      maxHintedRetries: options.maxHintedRetries ?? DEFAULT_RETRY_RULES.maxHintedRetries,
      maxSingleWaitMs: options.maxSingleWaitMs ?? DEFAULT_RETRY_RULES.maxSingleWaitMs,
      jitterMs: options.jitterMs ?? DEFAULT_RETRY_RULES.jitterMs,
      backoffBaseMs: options.backoffBaseMs ?? DEFAULT_RETRY_RULES.backoffBaseMs,
      backoffCapMs: options.backoffCapMs ?? DEFAULT_RETRY_RULES.backoffCapMs,
      agentDeduplicates: options.agentDeduplicates ?? DEFAULT_RETRY_RULES.agentDeduplicates,
    };
    this.budgetMs = options.budgetMs ?? 120_000;
    this.clock = options.clock ?? systemClock;
    this.sleep = options.sleep ?? systemSleep;
    this.random = options.random ?? Math.random;
    this.planFromCard = options.planFromCard ?? true;
    this.pacers = new PacerTable({
      clock: this.clock,
      sleep: this.sleep,
      random: this.random,
      jitterMs: this.rules.jitterMs,
      ...(options.maxGates === undefined ? {} : { maxEntries: options.maxGates }),
    });
  }

  /**
   * Learns the policies an agent card publishes (its rate-limit extension): from then on, first
   * sends to that agent are planned from them. `agents`: the keys the transports use for it
   * (default: the origin of each HTTP interface URL and each gRPC interface URL as written);
   * `caller`: the card is that caller's extended card (its own tier). Returns whether the card
   * carried the extension. A card without it, or `planFromCard: false`, changes nothing.
   *
   * @example
   * ```ts
   * const card = await new DefaultAgentCardResolver().resolve('https://agent.example');
   * scheduler.learnAgentCard(card);
   * const client = await factory.createFromAgentCard(card);
   * ```
   */
  learnAgentCard(
    card: unknown,
    options: { readonly agents?: readonly string[]; readonly caller?: string } = {},
  ): boolean {
    const limits = readRateLimitCard(card);
    if (limits === undefined || !this.planFromCard) return false;
    for (const agent of options.agents ?? agentCardTargets(card).keys) {
      this.pacers.learn(agent, limits, options.caller);
    }
    return true;
  }

  /** Now on the scheduler's clock, ms. */
  nowMs(): number {
    return this.clock.nowMs();
  }

  /** Calls held back before their first send (by a learned hold or a card's pace). */
  get waiting(): number {
    return this.pacers.waiting;
  }

  /**
   * Runs one call: waits for its pacer, sends, and re-sends on retryable failures until it succeeds
   * or a rule says stop. Resolves with the successful value, or with the transport's own failure
   * value; rejects with the transport's own error, `RateLimitedError`, `AgentOverloadedError`,
   * `RetryBudgetExceededError`, or the abort reason.
   */
  async run<T>(call: ScheduledCall, attempt: Attempt<T>): Promise<T> {
    const startMs = this.clock.nowMs();
    const deadlineMs = Math.min(
      call.deadlineMs ?? Number.POSITIVE_INFINITY,
      startMs + this.budgetMs,
    );
    const { agent, caller, method, signal } = call;
    const limits = { deadlineMs, maxWaitMs: this.rules.maxSingleWaitMs, signal };
    const paced = await this.pacers.start(agent, caller, method, limits);
    let hintedRetries = 0;

    for (let attemptIndex = 0; ; attemptIndex++) {
      this.stats.sends++;
      let outcome: AttemptOutcome<T>;
      try {
        outcome = await attempt(attemptIndex);
      } catch (error) {
        paced.failed();
        this.stats.failedCalls++;
        throw error;
      }
      if (outcome.ok) {
        paced.answered(outcome.rateLimit, outcome.busyUntil);
        return outcome.value;
      }

      const { hint } = outcome;
      paced.refused(hint);
      const plan = planRetry(
        {
          hint,
          method,
          retriesSoFar: attemptIndex,
          hintedRetriesSoFar: hintedRetries,
          nowMs: this.clock.nowMs(),
          deadlineMs,
          random: this.random,
          repeatable: call.repeatable,
        },
        this.rules,
      );
      if (plan.action === 'stop') {
        paced.stopped();
        this.stats.failedCalls++;
        return this.stop(plan.reason, outcome, attemptIndex + 1, {
          requiredWaitMs: plan.requiredWaitMs ?? 0,
          remainingMs: deadlineMs - this.clock.nowMs(),
        });
      }

      if (isHintedRefusal(hint)) hintedRetries++;
      paced.retryScheduled();
      try {
        await this.sleep(plan.delayMs, signal);
      } catch (error) {
        paced.retryCancelled();
        this.stats.failedCalls++;
        throw error;
      }
      paced.resend(hint);
      this.stats.retries++;
    }
  }

  private stop<T>(
    reason: StopReason,
    outcome: Extract<AttemptOutcome<T>, { ok: false }>,
    attempts: number,
    budget: { requiredWaitMs: number; remainingMs: number },
  ): T {
    const { hint, failure } = outcome;
    const cause = 'error' in failure ? failure.error : undefined;
    const options = cause === undefined ? { attempts } : { attempts, cause };
    if (reason === 'budget') {
      const refusedBy =
        budget.requiredWaitMs > this.rules.maxSingleWaitMs ? 'maxSingleWaitMs' : 'budgetMs';
      throw new RetryBudgetExceededError(hint, { ...options, ...budget, refusedBy });
    }
    if (reason === 'retries-exhausted' || reason === 'do-not-retry') {
      if (hint.kind === 'quota') throw new RateLimitedError(hint, options);
      if (hint.kind === 'overload') throw new AgentOverloadedError(hint, options);
    }
    if ('error' in failure) throw failure.error;
    return failure.value;
  }
}
