/**
 * @module store
 * The `Store` contract: one atomic decision over every key of a request, lease release and
 * renewal. `MemoryStore` (embedded default) and `RedisStore` (shared by replicas) implement it and
 * must decide identically; `a2a-ratelimit/testing` ships the contract suite both pass.
 */

import type { DecisionInput } from '../core/decide.js';
import type { CompiledPolicySet } from '../core/policy.js';
import type { Decision, LeaseRef } from '../core/rejection.js';
import type { MessageRecord } from './message-records.js';

export type { MessageRecord } from './message-records.js';

/**
 * Where limiter state lives. Every method is safe to call concurrently; `decide` is atomic over
 * all keys of one request (all-or-nothing).
 *
 * @example
 * ```ts
 * const decision = await store.decide({ caller: 'a', method: 'SendMessage', messageId: 'm1' });
 * if (decision.admitted) await store.release(decision.leases);
 * ```
 */
export interface Store {
  /** The validated policies this store decides with. */
  readonly policySet: CompiledPolicySet;
  /** Decides one request at the store's current time. */
  decide(input: DecisionInput): Promise<Decision>;
  /** Ends leases (task reached a terminal state, stream closed). Unknown leases are ignored. */
  release(leases: readonly LeaseRef[]): Promise<void>;
  /** Extends leases by their TTL; one boolean per lease, false when it is already gone. */
  renew(leases: readonly LeaseRef[]): Promise<boolean[]>;
  /**
   * Deduplication (DESIGN §4): atomically records (caller, messageId) for `ttlMs` if no live
   * record exists. `fresh: true` means this is the first copy; otherwise the earlier copy's
   * task id, once {@link Store.recordMessageTask} stored it.
   */
  rememberMessage(caller: string, messageId: string, ttlMs: number): Promise<MessageRecord>;
  /** Attaches the task an admitted message started to its record, which then lives `ttlMs`. */
  recordMessageTask(
    caller: string,
    messageId: string,
    taskId: string,
    ttlMs: number,
  ): Promise<void>;
  /** Frees resources (connections); the store is unusable afterwards. */
  close(): Promise<void>;
}
