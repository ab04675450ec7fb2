/**
 * @module pacer-table
 * `PacerTable`: one client's pacers, one per (agent, caller), and the agent cards they plan from,
 * under one bound counted in entries.
 */

import type { CardPolicy, CardRateLimits } from '../wire/rate-limit-card.js';
import { type CallBuckets, type PacedCall, Pacer, type PacerHost } from './pacer.js';
import type { LaneWaitLimits, PacerLaneDeps } from './pacer-lane.js';
import { type Sleep, systemSleep } from './sleep.js';

/**
 * Options of {@link PacerTable}.
 *
 * @internal
 * @example
 * ```ts
 * const table = new PacerTable({ clock: systemClock, maxEntries: 500 });
 * ```
 */
export interface PacerTableOptions extends Omit<PacerLaneDeps, 'sleep'> {
  /** Waits in the lanes. @defaultValue systemSleep */
  readonly sleep?: Sleep;
  /** Entries (lanes and buckets), and cards, kept at most while idle ones can go. @defaultValue 1_000 */
  readonly maxEntries?: number;
}

/**
 * The pacers of one client, keyed by (agent, caller), and the cards they plan from. Past
 * `maxEntries`, idle entries are dropped least recently used first; an entry holding a live wait
 * is never dropped (the table exceeds the bound only by those), nor the card of a busy agent.
 *
 * @internal
 * @example
 * ```ts
 * const table = new PacerTable({ clock: systemClock });
 * table.learn('https://agent.example', readRateLimitCard(card) as CardRateLimits);
 * const call = await table.start('https://agent.example', 'caller-a', 'SendMessage', limits);
 * ```
 */
export class PacerTable {
  private readonly host: PacerHost;
  private readonly maxEntries: number;
  private readonly pacers = new Map<string, Pacer>();
  private readonly cards = new Map<string, CardRateLimits>();
  private readonly callerCards = new Map<string, CardRateLimits>();
  private entries = 0;

  constructor(options: PacerTableOptions) {
    this.maxEntries = Math.max(1, options.maxEntries ?? 1_000);
    this.host = {
      deps: { ...options, sleep: options.sleep ?? systemSleep },
      makeRoom: (except) => this.makeRoom(except),
      counted: (delta) => {
        this.entries += delta;
      },
    };
  }

  /** Entries kept: every pacer's lanes and buckets. */
  get size(): number {
    return this.entries;
  }

  /** Calls waiting for their first send, in every pacer. */
  get waiting(): number {
    let n = 0;
    for (const pacer of this.pacers.values()) n += pacer.waiting;
    return n;
  }

  /**
   * Records what an agent's card says: for every caller (a public card), or for one caller (the
   * extended card it got).
   */
  learn(agent: string, limits: CardRateLimits, caller?: string): void {
    const map = caller === undefined ? this.cards : this.callerCards;
    const k = caller === undefined ? agent : key(agent, caller);
    map.delete(k);
    map.set(k, limits);
    // Least recently learned first, but never the card of an agent with a busy pacer.
    for (const [cardKey] of map) {
      if (map.size <= this.maxEntries) return;
      const cardAgent = caller === undefined ? cardKey : cardKey.slice(0, cardKey.indexOf('\0'));
      if (cardKey !== k && !this.isBusy(cardAgent)) map.delete(cardKey);
    }
  }

  /** Whether a card of this agent was learned (its public one, or this caller's extended one). */
  knows(agent: string, caller?: string): boolean {
    return (
      this.cards.has(agent) || (caller !== undefined && this.callerCards.has(key(agent, caller)))
    );
  }

  /** The card's buckets a call of `method` by `caller` to `agent` must satisfy, if any. */
  planFor(agent: string, caller: string, method: string): CallBuckets | undefined {
    const policies = this.policiesOf(agent, caller);
    if (policies === undefined) return undefined;
    const pacer = this.pacerFor(agent, caller);
    const plan = pacer.planFor(method, policies);
    if (pacer.size === 0) this.pacers.delete(key(agent, caller));
    return plan;
  }

  /** Waits until a call may be sent under its (agent, caller) pacer; see {@link Pacer.start}. */
  start(agent: string, caller: string, method: string, limits: LaneWaitLimits): Promise<PacedCall> {
    return this.pacerFor(agent, caller).start(method, this.policiesOf(agent, caller), limits);
  }

  /** The pacer of a pair, created on first use and marked most recently used. */
  private pacerFor(agent: string, caller: string): Pacer {
    const k = key(agent, caller);
    const pacer = this.pacers.get(k) ?? new Pacer(agent, this.host);
    this.pacers.delete(k);
    this.pacers.set(k, pacer);
    return pacer;
  }

  private policiesOf(agent: string, caller: string): readonly CardPolicy[] | undefined {
    const shared = this.cards.get(agent)?.policies;
    const own = this.callerCards.get(key(agent, caller))?.policies;
    if (own === undefined) return shared;
    if (shared === undefined) return own;
    return [...own, ...shared.filter((p) => !own.some((o) => o.name === p.name))];
  }

  private isBusy(agent: string): boolean {
    for (const pacer of this.pacers.values()) {
      if (pacer.agent === agent && !pacer.isIdle()) return true;
    }
    return false;
  }

  /**
   * Before an entry is added at the bound: idle pacers go, least recently used first, then idle
   * entries of busy ones; `except` (the pacer adding) and live entries stay.
   */
  private makeRoom(except: Pacer): void {
    if (this.entries < this.maxEntries) return;
    for (const [k, pacer] of this.pacers) {
      if (this.entries < this.maxEntries) return;
      if (pacer === except || !pacer.isIdle()) continue;
      this.pacers.delete(k);
      this.entries -= pacer.size;
    }
    for (const pacer of this.pacers.values()) {
      if (this.entries < this.maxEntries) return;
      if (pacer !== except) pacer.prune();
    }
  }
}

function key(...parts: string[]): string {
  return parts.join('\0');
}
