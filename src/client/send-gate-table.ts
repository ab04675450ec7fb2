/**
 * @module send-gate-table
 * `SendGateTable`: the gates of one client, keyed by (agent, caller, group), and what it learned
 * about which policy limits which method. Bounded without forgetting a wait in force: past
 * `maxGates`, idle gates are dropped least recently used first (an idle gate holds nothing a fresh
 * one would not); a gate with a live hold (a wait in force, calls queued or in flight) is never
 * dropped, nor the method → policy mapping that leads to it. So the table exceeds `maxGates` only
 * by gates holding a live wait, each dropped once its wait is over; and one agent naming ever new
 * policies cannot mint gates: past `maxGroupsPerCaller` groups per (agent, caller), further
 * policies share one overflow gate (their waits add up there, none is lost).
 */

import { SendGate, type SendGateDeps } from './send-gate.js';

/**
 * Options of {@link SendGateTable}.
 *
 * @example
 * ```ts
 * const table = new SendGateTable({ clock: systemClock, sleep: systemSleep, maxGates: 500 });
 * ```
 */
export interface SendGateTableOptions extends SendGateDeps {
  /**
   * Gates (and learned method → policy mappings) kept at most while idle ones can be dropped;
   * gates holding a live wait are kept on top of it until their wait is over. @defaultValue 1_000
   */
  readonly maxGates?: number;
  /**
   * Groups (policies named by rejections, and methods) per (agent, caller); past it, further
   * policies share one overflow gate. @defaultValue 32
   */
  readonly maxGroupsPerCaller?: number;
}

/** The group of the gate that policies past `maxGroupsPerCaller` share. */
const OVERFLOW_GROUP = '(overflow)';

interface LearnedPolicy {
  readonly policy: string;
  /** The (agent, caller) key. */
  readonly pair: string;
}

/**
 * The gates of one client, keyed by (agent, caller, group), and what it learned about which policy
 * limits which method. Past `maxGates`, idle gates are dropped least recently used first; a gate
 * holding a live wait is never dropped (the table exceeds `maxGates` only by those, until their
 * waits end), nor is the mapping that leads a method to it.
 *
 * @example
 * ```ts
 * const table = new SendGateTable({ clock, sleep });
 * const gate = table.gateFor('https://agent.example', 'caller-a', 'SendMessage');
 * ```
 */
export class SendGateTable {
  private readonly deps: SendGateDeps;
  private readonly maxGates: number;
  private readonly maxGroupsPerCaller: number;
  private readonly gates = new Map<string, SendGate>();
  /** Gates kept per (agent, caller). */
  private readonly groupsPerCaller = new Map<string, number>();
  private readonly policyByMethod = new Map<string, LearnedPolicy>();

  constructor(options: SendGateTableOptions) {
    this.deps = options;
    this.maxGates = Math.max(1, options.maxGates ?? 1_000);
    this.maxGroupsPerCaller = Math.max(1, options.maxGroupsPerCaller ?? 32);
  }

  /** Gates currently kept. */
  get size(): number {
    return this.gates.size;
  }

  /** Calls waiting in any gate for their first send. */
  get waiting(): number {
    let n = 0;
    for (const gate of this.gates.values()) n += gate.queued;
    return n;
  }

  /** The group a method's calls queue in: the policy last seen limiting it, else the method. */
  groupFor(agent: string, caller: string, method: string): string {
    return this.policyByMethod.get(key(agent, caller, method))?.policy ?? method;
  }

  /** Records that `policy` limits `method` for this agent and caller. */
  learnPolicy(agent: string, caller: string, method: string, policy: string): void {
    const k = key(agent, caller, method);
    this.policyByMethod.delete(k);
    this.policyByMethod.set(k, { policy, pair: key(agent, caller) });
    if (this.policyByMethod.size <= this.maxGates) return;
    // Least recently learned first, but never one leading to a gate that holds a live wait.
    for (const [m, learned] of this.policyByMethod) {
      if (this.policyByMethod.size <= this.maxGates) return;
      if (m !== k && !this.isLive(learned.pair, learned.policy)) this.policyByMethod.delete(m);
    }
  }

  /**
   * The gate of a group, created on first use (and marked most recently used). A new group of an
   * (agent, caller) that has `maxGroupsPerCaller` already, or whose overflow gate holds a live
   * wait, gets the overflow gate.
   */
  gateFor(agent: string, caller: string, group: string): SendGate {
    const pair = key(agent, caller);
    let k = key(pair, group);
    let gate = this.gates.get(k);
    if (gate === undefined) {
      const overflowKey = key(pair, OVERFLOW_GROUP);
      const overflow = this.gates.get(overflowKey);
      const full = (this.groupsPerCaller.get(pair) ?? 0) >= this.maxGroupsPerCaller;
      if (full || (overflow !== undefined && !overflow.isIdle())) {
        k = overflowKey;
        gate = overflow;
      }
    }
    if (gate === undefined) {
      this.evict();
      gate = new SendGate(k === key(pair, group) ? group : OVERFLOW_GROUP, this.deps);
      this.groupsPerCaller.set(pair, (this.groupsPerCaller.get(pair) ?? 0) + 1);
    }
    this.gates.delete(k);
    this.gates.set(k, gate);
    return gate;
  }

  /** Whether the gate a policy's calls queue in (its own, or its pair's overflow) holds a wait. */
  private isLive(pair: string, policy: string): boolean {
    const own = this.gates.get(key(pair, policy));
    const overflow = this.gates.get(key(pair, OVERFLOW_GROUP));
    return (own !== undefined && !own.isIdle()) || (overflow !== undefined && !overflow.isIdle());
  }

  /** Drops idle gates while at the cap, least recently used first; gates holding a wait stay. */
  private evict(): void {
    if (this.gates.size < this.maxGates) return;
    for (const [k, gate] of this.gates) {
      if (this.gates.size < this.maxGates) return;
      if (!gate.isIdle()) continue;
      this.gates.delete(k);
      const pair = k.slice(0, k.length - gate.group.length - 1);
      const left = (this.groupsPerCaller.get(pair) ?? 1) - 1;
      if (left > 0) this.groupsPerCaller.set(pair, left);
      else this.groupsPerCaller.delete(pair);
    }
  }
}

function key(...parts: string[]): string {
  return parts.join('\u0000');
}
