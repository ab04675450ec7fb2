/**
 * @module store
 * The `Store` contract — one atomic decision over every key of a request, lease release and renewal
 * — and its in-process capability `SynchronousStore`.
 */

import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { DecisionInput } from '../core/decision-state.js';
import type { Decision, LeaseRef } from '../core/rejection.js';
import type { MessageRecord, PendingMessageOptions } from './message-records.js';

/**
 * Where limiter state lives. Every method is safe to call concurrently; `decide` is atomic over
 * all keys of one request (all-or-nothing). An in-process store may also have the synchronous
 * methods of `SynchronousStore` (all of them, or none): the limiter then takes the
 * synchronous path for it, whatever its class.
 *
 * @example
 * ```ts
 * const decision = await store.decide({ caller: 'a', method: 'SendMessage', messageId: 'm1' });
 * if (decision.admitted) await store.release(decision.leases);
 * ```
 */
export interface Store extends Partial<SynchronousStore> {
  /** The validated policies this store decides with (the latest set after `updatePolicies`). */
  readonly policySet: CompiledPolicySet;
  /** Decides one request at the store's current time. */
  decide(input: DecisionInput): Promise<Decision>;
  /** Ends leases (task reached a terminal state, stream closed). Unknown leases are ignored. */
  release(leases: readonly LeaseRef[]): Promise<void>;
  /** Extends leases by their TTL; one boolean per lease, false when it is already gone. */
  renew(leases: readonly LeaseRef[]): Promise<boolean[]>;
  /**
   * Deduplication (docs/architecture.md, "Deduplication and leases"): atomically records (caller, messageId) for `ttlMs` if no live
   * record exists. `fresh: true` means this is the first copy; otherwise the earlier copy's
   * task id, once {@link Store.recordMessageTask} stored it. With `pending` (a shared store), the
   * new record is pending only `pendingTtlMs` unless renewed, then `orphaned` (see
   * `MessageRecord`); `unavailable` when the store cannot answer.
   */
  rememberMessage(
    caller: string,
    messageId: string,
    ttlMs: number,
    pending?: PendingMessageOptions,
  ): Promise<MessageRecord>;
  /**
   * Shared stores: extends pending records `owner` holds by `pendingTtlMs`; one boolean per
   * record, false when it is no longer `owner`'s pending record (taken over, recorded, gone).
   * Rejects when the store cannot be reached. In-process stores leave it out (nothing to share).
   */
  renewPendingMessages?(
    records: readonly { readonly caller: string; readonly messageId: string }[],
    owner: string,
    pendingTtlMs: number,
  ): Promise<boolean[]>;
  /** Shared stores: drops `owner`'s pending record of a message (nothing ran; a copy may run). */
  forgetPendingMessage?(caller: string, messageId: string, owner: string): Promise<void>;
  /**
   * Attaches the task an admitted message started to its record, which then lives `ttlMs`.
   * `taskId` is opaque: the limiter also records marks and the Message a first copy was answered
   * with (values beginning with `\0`, as large as `dedup.answers.maxBytes`, 16 KiB by default):
   * return it from {@link Store.rememberMessage} exactly as given.
   */
  recordMessageTask(
    caller: string,
    messageId: string,
    taskId: string,
    ttlMs: number,
  ): Promise<void>;
  /**
   * Charges `units` of reported usage (a positive integer) to every usage policy (`unit` set)
   * that applies to `request` (as `policiesOf` selects them); may put a budget into debt (see
   * `chargeUsage`). With `options.settle`, the report settles the reservation the request's admission
   * made (`reservedUnitsOf` the policy): each budget is charged `units` minus that reservation,
   * given back when the task used less. Other policies are not touched.
   */
  chargeUsage?(
    request: DecisionInput,
    units: number,
    options?: { readonly settle?: boolean },
  ): Promise<void>;
  /** Swaps the policy set. State is kept per policy *name*: a policy present in both sets keeps
   *  every key's state (its new limits apply to it; nobody gets a fresh bucket); a removed
   *  policy's state and leases are dropped; a new policy starts empty. Shared stores publish
   *  the set to their other replicas. */
  updatePolicies?(next: CompiledPolicySet): Promise<void>;
  /** Shared stores: calls `listener` when a set published by another replica was adopted. */
  onPoliciesChanged?(listener: (set: CompiledPolicySet) => void): () => void;
  /** Frees resources (connections); the store is unusable afterwards. */
  close(): Promise<void>;
}

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
