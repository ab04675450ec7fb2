/**
 * @module lease-tables
 * The lease sets of `MemoryStore`, one table per concurrency / overload policy, and the incremental
 * sweep of expired keys.
 */

import type { LeaseSet } from '../core/decision-state.js';
import { isSpentLeaseSet, pruneLeases } from '../core/lease-step.js';

/** Lease tables by policy index (a rate policy's table stays empty). */
export class LeaseTables {
  /** By policy index. */
  private tables: Map<string, LeaseSet>[] = [];
  private cursor: { index: number; it: Iterator<[string, LeaseSet]> } | undefined;

  /** The table of policy `index` (undefined when the set has no such policy). */
  of(index: number): Map<string, LeaseSet> | undefined {
    return this.tables[index];
  }

  /**
   * Replaces the tables, e.g. after a policy-set change: `next[i]` is policy `i`'s table (an old
   * one kept, or a new empty one). The sweep starts over.
   */
  replace(next: Map<string, LeaseSet>[]): void {
    this.tables = next;
    this.cursor = undefined;
  }

  /** Live leases over every table. */
  count(): number {
    let leases = 0;
    for (const m of this.tables) {
      if (m === undefined) continue;
      for (const s of m.values()) leases += s.leases.size;
    }
    return leases;
  }

  /**
   * Examines up to `budget` lease keys: prunes expired leases, drops spent keys. Returns
   * how many keys it dropped.
   */
  sweep(nowMs: number, budget: number): number {
    let dropped = 0;
    for (let i = 0; i < budget; i++) {
      if (this.cursor === undefined) {
        this.cursor = this.cursorFrom(0);
        if (this.cursor === undefined) return dropped;
      }
      const next = this.cursor.it.next();
      if (next.done) {
        this.cursor = this.cursorFrom(this.cursor.index + 1);
        if (this.cursor === undefined) return dropped;
        continue;
      }
      const [key, set] = next.value;
      pruneLeases(set, nowMs);
      // Not before its estimate is forgotten (`isSpentLeaseSet`): a decision reads none then.
      if (isSpentLeaseSet(set, nowMs) && this.tables[this.cursor.index]?.delete(key)) dropped++;
    }
    return dropped;
  }

  /** A cursor over the first non-empty table at or after `start`. */
  private cursorFrom(
    start: number,
  ): { index: number; it: Iterator<[string, LeaseSet]> } | undefined {
    const index = this.tables.findIndex((m, j) => j >= start && m !== undefined && m.size > 0);
    if (index < 0) return undefined;
    return { index, it: (this.tables[index] as Map<string, LeaseSet>).entries() };
  }
}
