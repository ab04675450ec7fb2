/**
 * @module send-gate-table
 * `SendGateTable`: the gates of one client, keyed by (agent, caller, group), and what it learned
 * about which policy limits which method. Bounded: past `maxGates`, idle gates are dropped least
 * recently used first (an idle gate holds nothing a fresh one would not).
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
  /** Gates (and learned method → policy mappings) kept at most; idle ones go first. @defaultValue 1_000 */
  readonly maxGates?: number;
}

/**
 * The gates of one client, keyed by (agent, caller, group), and what it learned about which policy
 * limits which method. Bounded: past `maxGates`, idle gates are dropped least recently used first
 * (an idle gate holds nothing a fresh one would not).
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
  private readonly gates = new Map<string, SendGate>();
  private readonly policyByMethod = new Map<string, string>();

  constructor(options: SendGateTableOptions) {
    this.deps = options;
    this.maxGates = Math.max(1, options.maxGates ?? 1_000);
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
    return this.policyByMethod.get(key(agent, caller, method)) ?? method;
  }

  /** Records that `policy` limits `method` for this agent and caller. */
  learnPolicy(agent: string, caller: string, method: string, policy: string): void {
    const k = key(agent, caller, method);
    this.policyByMethod.delete(k);
    this.policyByMethod.set(k, policy);
    while (this.policyByMethod.size > this.maxGates) {
      const oldest = this.policyByMethod.keys().next().value as string;
      this.policyByMethod.delete(oldest);
    }
  }

  /** The gate of a group, created on first use (and marked most recently used). */
  gateFor(agent: string, caller: string, group: string): SendGate {
    const k = key(agent, caller, group);
    let gate = this.gates.get(k);
    if (gate !== undefined) {
      this.gates.delete(k);
    } else {
      gate = new SendGate(group, this.deps);
      this.evict();
    }
    this.gates.set(k, gate);
    return gate;
  }

  /** Drops idle gates while over the cap, least recently used first; busy gates stay. */
  private evict(): void {
    if (this.gates.size < this.maxGates) return;
    for (const [k, gate] of this.gates) {
      if (this.gates.size < this.maxGates) return;
      if (gate.isIdle()) this.gates.delete(k);
    }
  }
}

function key(agent: string, caller: string, name: string): string {
  return `${agent}\u0000${caller}\u0000${name}`;
}
