/**
 * @module store-contract-kit
 * What the store contract cases share: factory and case types, a fresh store on a manual clock,
 * small request and assertion helpers.
 */

import { strict as assert } from 'node:assert';
import type { DecisionInput } from '../core/decision-state.js';
import type { HoldOptions, Policy } from '../core/policy.js';
import type { Decision, Rejection } from '../core/rejection.js';
import { WORKED_EXAMPLE_POLICY } from '../simulation/worked-example-policy.js';
import type { Store } from '../store/store.js';
import { ManualClock } from './manual-clock.js';

/**
 * Builds a fresh, empty store for one case, reading time from `clock`.
 *
 * @example
 * ```ts
 * const factory: StoreFactory = async (policies, holds, clock) => new MemoryStore({ policies, holds, clock });
 * ```
 */
export type StoreFactory = (
  policies: readonly Policy[],
  holds: HoldOptions | undefined,
  clock: ManualClock,
) => Promise<Store>;

/**
 * One contract case.
 *
 * @example
 * ```ts
 * for (const c of STORE_CONTRACT) test(c.name, () => c.run(factory));
 * ```
 */
export interface StoreContractCase {
  readonly name: string;
  run(factory: StoreFactory): Promise<void>;
}

/** A realistic epoch, so stores see Unix-scale timestamps (ms). */
export const T0_MS = 1_760_000_000_000;

/** The worked example's per-caller policy. */
export const PER_CALLER: Policy = WORKED_EXAMPLE_POLICY;

/** A SendMessage of `caller` (with `messageId` when given). */
export function send(
  caller: string,
  messageId?: string,
  extra?: Partial<DecisionInput>,
): DecisionInput {
  return {
    caller,
    method: 'SendMessage',
    ...(messageId === undefined ? {} : { messageId }),
    ...extra,
  };
}

/** The rejection of `d`; fails when it admitted. */
export function rejected(d: Decision, what: string): Rejection {
  assert.equal(d.admitted, false, `${what}: expected a rejection`);
  if (d.admitted) throw new Error('unreachable');
  return d.rejection;
}

/** A fresh store of `policies` on a manual clock at {@link T0_MS}. */
export async function setup(
  factory: StoreFactory,
  policies: readonly Policy[],
  holds?: HoldOptions,
) {
  const clock = new ManualClock(T0_MS);
  const store = await factory(policies, holds, clock);
  return { clock, store };
}

/** Moves the clock to `t0 + ms`. */
export function at(clock: ManualClock, ms: number): void {
  clock.set(T0_MS + ms);
}

/** A request to retry at its due time. */
export interface Pending {
  readonly messageId: string;
  readonly dueMs: number;
}

/** Retries every pending request at its due time (in time order); returns how many were admitted. */
export async function retryAll(
  store: Store,
  clock: ManualClock,
  caller: string,
  pending: Pending[],
) {
  let admitted = 0;
  const failures: string[] = [];
  for (const p of [...pending].sort((a, b) => a.dueMs - b.dueMs)) {
    at(clock, p.dueMs);
    const d = await store.decide(send(caller, p.messageId));
    if (d.admitted) admitted++;
    else failures.push(`${p.messageId}@${p.dueMs}ms: ${d.rejection.retryAfterMs}ms more`);
  }
  return { admitted, failures };
}
