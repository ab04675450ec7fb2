/**
 * @module synchronous-store
 * The in-process capability of the `Store` contract: synchronous decisions, lease release and
 * renewal, and a deduplication table of this process's own admitted messages. The limiter takes
 * one deduplication protocol for every store that has it (`MemoryStore`, a wrapper of one, a
 * custom in-process store) and the shared protocol (pending records) for every store that has not;
 * no class check, so two installed copies of this package still agree.
 */

import type { DecisionInput } from '../core/decision-state.js';
import type { Decision, LeaseRef } from '../core/rejection.js';
import type { MessageRecord } from './message-records.js';
import type { Store } from './store.js';

/**
 * What an in-process store offers besides the asynchronous contract. Message records are keyed by
 * `messageRecordKey(caller, messageId)`; the limiter writes one only for a message it admitted
 * (`rememberMessageKeySync` after the decision, in the same synchronous step as the check), so a
 * flood of rejected copies never takes room, and "no record" means "run it".
 */
export interface SynchronousStore {
  /** `Store.decide`, now, synchronously. */
  decideSync(input: DecisionInput): Decision;
  /** `Store.release`, synchronously; unknown leases are ignored. */
  releaseSync(leases: readonly LeaseRef[]): void;
  /** `Store.renew`, synchronously. */
  renewSync(leases: readonly LeaseRef[]): boolean[];
  /** The live record of a message key without writing one; undefined when there is none. */
  peekMessageKeySync(key: string): Exclude<MessageRecord, { fresh: true }> | undefined;
  /** Records a message key for `ttlMs` if no live record exists (a pending record: no task yet). */
  rememberMessageKeySync(key: string, ttlMs: number): MessageRecord;
  /** Drops the record of a message key (nothing ran: the next copy is fresh). */
  forgetMessageKeySync(key: string): void;
  /** Attaches the task (or a mark) to a message key's record, which then lives `ttlMs`. */
  recordMessageTaskKeySync(key: string, taskId: string, ttlMs: number): void;
}

const SYNCHRONOUS_METHODS = [
  'decideSync',
  'releaseSync',
  'renewSync',
  'peekMessageKeySync',
  'rememberMessageKeySync',
  'forgetMessageKeySync',
  'recordMessageTaskKeySync',
] as const satisfies readonly (keyof SynchronousStore)[];

/**
 * The store itself when it has every synchronous method (the in-process path), else undefined
 * (the shared path). A store with only some of them is refused: half a protocol would mix the two.
 *
 * @example
 * ```ts
 * const sync = synchronousStore(store);
 * const decision = sync !== undefined ? sync.decideSync(input) : await store.decide(input);
 * ```
 */
export function synchronousStore(store: Store): (Store & SynchronousStore) | undefined {
  const present = SYNCHRONOUS_METHODS.filter((m) => typeof store[m] === 'function');
  if (present.length === 0) return undefined;
  if (present.length < SYNCHRONOUS_METHODS.length) {
    const missing = SYNCHRONOUS_METHODS.filter((m) => typeof store[m] !== 'function');
    throw new TypeError(
      `store: has ${present.join(', ')} but not ${missing.join(', ')}: an in-process store needs every synchronous method, a shared one none`,
    );
  }
  return store as Store & SynchronousStore;
}
