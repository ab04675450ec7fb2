/**
 * @module send-plan-table
 * `SendPlanTable`: what one client knows about the policies of the agents it calls — from each
 * agent's card (its rate-limit extension), and per caller from the extended card a caller got
 * after authenticating (its own tier) — and the plans it keeps per (agent, caller, policy bucket).
 * Only caller-scoped policies are planned (`caller`, and `caller+method` per method): a bucket
 * shared with other callers (tenant, agent, skill…) cannot be mirrored from one client's sends, so
 * those are left to the `RateLimit` answers and the hints, as without a card. Bounded without
 * forgetting a live hold: past `maxPlans`, idle plans and the cards of agents least recently used
 * are dropped, but never a plan still holding sends back (a bucket not yet refilled, a send
 * unanswered, a call in flight) nor the card of an agent that has one; a call is planned by at
 * most {@link MAX_PLANNED_POLICIES} policies (a card listing thousands cannot mint plans).
 */

import type { Clock } from '../core/clock.js';
import type { CardPolicy, CardRateLimits } from '../wire/rate-limit-card.js';
import { CallPlan, ConcurrencyPlan, RatePlan } from './policy-plan.js';

/**
 * Options of {@link SendPlanTable}.
 *
 * @example
 * ```ts
 * const table = new SendPlanTable({ clock: systemClock, maxPlans: 500 });
 * ```
 */
export interface SendPlanTableOptions {
  /** Time source (to tell idle plans). */
  readonly clock: Clock;
  /** Plans (and cards) kept at most; idle plans go first. @defaultValue 1_000 */
  readonly maxPlans?: number;
}

/**
 * Policies one call is planned by at most (the card's first ones naming its method); any further
 * ones are left to the answers and hints, as without a card.
 *
 * @example
 * ```ts
 * table.planFor(agent, caller, 'SendMessage')?.rates.length; // ≤ MAX_PLANNED_POLICIES
 * ```
 */
export const MAX_PLANNED_POLICIES = 32;

/** Scopes whose bucket belongs to one caller (per method for `caller+method`). */
const PLANNED_SCOPES: ReadonlySet<string> = new Set(['caller', 'caller+method']);

/**
 * The policies known per agent and caller, and the plans built from them.
 *
 * @example
 * ```ts
 * const table = new SendPlanTable({ clock: systemClock });
 * table.learn('https://agent.example', readRateLimitCard(card) as CardRateLimits);
 * const plan = table.planFor('https://agent.example', 'caller-a', 'SendMessage');
 * ```
 */
export class SendPlanTable {
  private readonly clock: Clock;
  private readonly maxPlans: number;
  private readonly cards = new Map<string, CardRateLimits>();
  private readonly callerCards = new Map<string, CardRateLimits>();
  private readonly plans = new Map<string, RatePlan | ConcurrencyPlan>();
  /** The keys of the plans kept per agent (a card is kept while one of them is live). */
  private readonly plansOfAgent = new Map<string, Set<string>>();

  constructor(options: SendPlanTableOptions) {
    this.clock = options.clock;
    this.maxPlans = Math.max(1, options.maxPlans ?? 1_000);
  }

  /** Plans currently kept. */
  get size(): number {
    return this.plans.size;
  }

  /**
   * Records what an agent's card says: for every caller (a public card), or for one caller (the
   * extended card it got, whose policies replace the public ones of the same name).
   */
  learn(agent: string, limits: CardRateLimits, caller?: string): void {
    const map = caller === undefined ? this.cards : this.callerCards;
    const k = caller === undefined ? agent : key(agent, caller);
    map.delete(k);
    map.set(k, limits);
    if (map.size <= this.maxPlans) return;
    // Least recently learned first, but never the card of an agent whose plans hold sends back.
    const nowMs = this.clock.nowMs();
    for (const [cardKey] of map) {
      if (map.size <= this.maxPlans) return;
      const cardAgent =
        caller === undefined ? cardKey : cardKey.slice(0, cardKey.indexOf('\u0000'));
      if (cardKey !== k && !this.hasLivePlan(cardAgent, nowMs)) map.delete(cardKey);
    }
  }

  private hasLivePlan(agent: string, nowMs: number): boolean {
    for (const planKey of this.plansOfAgent.get(agent) ?? []) {
      if (this.plans.get(planKey)?.isIdle(nowMs) === false) return true;
    }
    return false;
  }

  /** Whether a card of this agent was learned (its public one, or this caller's extended one). */
  knows(agent: string, caller?: string): boolean {
    return (
      this.cards.has(agent) || (caller !== undefined && this.callerCards.has(key(agent, caller)))
    );
  }

  /**
   * The plans a call of `method` by `caller` to `agent` must satisfy, or `undefined` when no card
   * of this agent names a caller-scoped policy for the method.
   */
  planFor(agent: string, caller: string, method: string): CallPlan | undefined {
    const policies = this.policiesOf(agent, caller);
    if (policies === undefined) return undefined;
    const rates: RatePlan[] = [];
    const concurrency: ConcurrencyPlan[] = [];
    for (const p of policies) {
      if (!PLANNED_SCOPES.has(p.scope) || !(p.methods as readonly string[]).includes(method)) {
        continue;
      }
      // A usage budget (tokens) is not paced by requests: its refusals still come as hints.
      if (p.kind === 'rate' && p.unit !== undefined) continue;
      const bucket = p.scope === 'caller+method' ? `${p.name}\u0000${method}` : p.name;
      const plan = this.planOf(agent, key(agent, caller, bucket), p);
      if (plan instanceof RatePlan) rates.push(plan);
      else concurrency.push(plan);
      if (rates.length + concurrency.length === MAX_PLANNED_POLICIES) break;
    }
    return rates.length + concurrency.length === 0 ? undefined : new CallPlan(rates, concurrency);
  }

  private policiesOf(agent: string, caller: string): readonly CardPolicy[] | undefined {
    const shared = this.cards.get(agent)?.policies;
    const own = this.callerCards.get(key(agent, caller))?.policies;
    if (own === undefined) return shared;
    if (shared === undefined) return own;
    return [...own, ...shared.filter((p) => !own.some((o) => o.name === p.name))];
  }

  /** The plan of one bucket, created on first use, retuned when the card's numbers changed. */
  private planOf(agent: string, k: string, p: CardPolicy): RatePlan | ConcurrencyPlan {
    const existing = this.plans.get(k);
    let plan: RatePlan | ConcurrencyPlan;
    if (p.kind === 'rate') {
      plan = existing instanceof RatePlan ? existing : new RatePlan(p);
      plan.publish(p);
    } else {
      plan = existing instanceof ConcurrencyPlan ? existing : new ConcurrencyPlan(p.name, p.max);
      plan.publish(p.max);
    }
    if (existing !== undefined) this.plans.delete(k);
    else {
      this.evict();
      const keys = this.plansOfAgent.get(agent) ?? new Set<string>();
      keys.add(k);
      this.plansOfAgent.set(agent, keys);
    }
    this.plans.set(k, plan);
    return plan;
  }

  /**
   * Drops idle plans while at the cap, least recently used first; busy plans stay (the table
   * exceeds `maxPlans` only by plans holding sends back, until they are idle again).
   */
  private evict(): void {
    if (this.plans.size < this.maxPlans) return;
    const nowMs = this.clock.nowMs();
    for (const [k, plan] of this.plans) {
      if (this.plans.size < this.maxPlans) return;
      if (!plan.isIdle(nowMs)) continue;
      this.plans.delete(k);
      const agent = k.slice(0, k.indexOf('\u0000'));
      const keys = this.plansOfAgent.get(agent);
      keys?.delete(k);
      if (keys?.size === 0) this.plansOfAgent.delete(agent);
    }
  }
}

function key(...parts: string[]): string {
  return parts.join('\u0000');
}
