/**
 * @module limiter-api
 * The limiter as its adapters see it: the `Limiter` interface, what an admission yields, and the
 * names shared with the adapters.
 */

import type { A2AMethod } from '../core/a2a-methods.js';
import type { Clock } from '../core/clock.js';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { Policy, RequestIdentity } from '../core/policy.js';
import type { LimitState, Rejection } from '../core/rejection.js';
import type { Store } from '../store/store.js';
import type { GrpcRejectionStatus, HttpRejectionResponse } from '../wire/index.js';
import type { AdmissionRequest } from './limiter-options.js';
import type { MessageAnswer } from './message-answer.js';
import type { EventBusManagerLike } from './task-lease-tracker.js';
import type { TaskRef, TaskUsageReporter } from './task-usage.js';

/**
 * What the limiter made of a request.
 * - `admitted`: go on; `ticket.headers` are the `RateLimit` headers for the response; call
 *   `ticket.end()` when the response ends.
 * - `rejected`: write the rejection (nothing was created or started).
 * - `duplicate`: a copy of an already admitted message; answer with task `taskId`, or — when the
 *   first copy produced no task — with the Message it was answered with (`answer`, when it was
 *   kept: `dedup.answers`), else say it was processed without a task; do not run it.
 *
 * @example
 * ```ts
 * const outcome = await limiter.admit({ caller: 'a', method: 'GetTask', binding: 'rest' });
 * if (outcome.status === 'rejected') console.log(outcome.rejection.retryAfterMs);
 * ```
 */
export type AdmissionOutcome =
  | { readonly status: 'admitted'; readonly ticket: AdmissionTicket }
  | {
      readonly status: 'rejected';
      readonly rejection: Rejection;
      readonly limits: readonly LimitState[];
    }
  | {
      readonly status: 'duplicate';
      readonly taskId: string | undefined;
      /** The first copy's Message answer and the SDK scope it was given in (no task). */
      readonly answer?: MessageAnswer;
    };

/**
 * Metadata / header key carrying an admission's ticket id from the adapter (which always sets or
 * clears it) to the SDK's request handler, where {@link Limiter.trackTasks} reads it from
 * `ServerCallContext.state.get('headers')` to tie leases and dedup entries to the task.
 */
export const TICKET_HEADER = 'x-a2a-ratelimit-ticket';

/**
 * Policy name of the 503 a message gets when a shared store cannot say whether it is a copy.
 *
 * @example
 * ```ts
 * if (rejection.policy === DEDUP_UNAVAILABLE_POLICY) console.log('deduplication store down');
 * ```
 */
export const DEDUP_UNAVAILABLE_POLICY = 'store-unavailable';

/**
 * An admitted request: its leases and `RateLimit` headers. The adapter calls {@link end} when the
 * response ends for any reason; task leases bound to a task by {@link Limiter.trackTasks} outlive it.
 *
 * @example
 * ```ts
 * res.on('close', () => ticket.end());
 * ```
 */
export interface AdmissionTicket {
  /** Unique id, carried in `TICKET_HEADER`. */
  readonly id: string;
  readonly request: AdmissionRequest;
  /** Rate states after this request was charged. */
  readonly limits: readonly LimitState[];
  /** `ratelimit-policy` / `ratelimit` headers for the response (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  /** True when admitted by claiming a held slot. */
  readonly claimedHold: boolean;
  /**
   * False when the ticket holds nothing (no lease, no deduplication outcome to record): then an
   * adapter need not call {@link AdmissionTicket.end} nor hand the ticket to the SDK.
   */
  readonly needsEnd: boolean;
  /** Ends the response: releases response leases, and task leases not bound to a task. Idempotent. */
  end(): void;
}

/**
 * The limiter: identity in, one decision out, encoded per binding.
 *
 * @example
 * ```ts
 * const limiter = createLimiter({ policies, card });
 * const outcome = await limiter.admit({ caller: 'a', method: 'SendMessage', messageId: 'm', binding: 'jsonrpc' });
 * ```
 */
export interface Limiter {
  /** The policies in force (the latest set after {@link Limiter.updatePolicies}). */
  readonly policySet: CompiledPolicySet;
  /**
   * A stable content hash of {@link Limiter.policySet} (`policySetVersion`): the same policies
   * give the same string on every replica; it changes with every update that changes the set.
   */
  readonly policySetVersion: string;
  /**
   * Swaps the policy set without a restart. `next` is validated first: a bad set throws a
   * `PolicyError` naming the policy and field, and nothing changes. Then the store swaps its set
   * (state is kept per policy name: a policy in both sets keeps every key's state and its new
   * limits apply at once; a removed policy stops; a new one starts empty) and the limiter
   * recomputes what it derives from it (lease lifetimes and renewal, resubscription policies,
   * shadow policies, the card extension, the overload signal). Open tickets and task leases of
   * kept policies go on working; those of removed policies are forgotten (never an error).
   * Rejects when the store has no `updatePolicies`. Sets another replica published
   * (`store.onPoliciesChanged`) are adopted the same way.
   */
  updatePolicies(next: readonly Policy[]): Promise<void>;
  /**
   * Calls `listener` with the new set each time another set is put in force here (by
   * {@link Limiter.updatePolicies} or adopted from another replica); returns the unsubscribe.
   * The card follower and the metrics use it; a listener that throws is not called again for
   * that change and does not stop the others.
   */
  onPoliciesChanged(listener: (set: CompiledPolicySet) => void): () => void;
  readonly store: Store;
  readonly clock: Clock;
  /** ErrorInfo domain of every rejection. */
  readonly domain: string;
  /** Methods deduplicated by messageId (empty when off). */
  readonly dedupMethods: ReadonlySet<A2AMethod>;
  /** Decides one request. Synchronous for a `MemoryStore` unless deduplication needs the store. */
  admit(request: AdmissionRequest): AdmissionOutcome | Promise<AdmissionOutcome>;
  /**
   * The tier a request is decided under: its own `tier`, else `tierOf(request)`; undefined when
   * neither says (tiered policies then apply their `defaultTier`).
   */
  tierOf(request: RequestIdentity): string | undefined;
  /**
   * Charges `units` (a positive integer) of real usage — e.g. the model tokens a task burned —
   * to every usage policy (`unit` set) that applies to `request` (the identity the task was
   * admitted with: caller, method, tenant; its tier is resolved as at admission). The budget may
   * go into debt; the caller's next admission then waits exactly until it is positive again.
   * Usage is charged to the store, so it counts after the task ended and whether or not the
   * caller is still connected.
   *
   * Each admission under a usage policy reserved units (its `estimate`, or its whole burst when
   * it gives none). `{ settle: true }` makes this report settle one admission's reservation:
   * each budget is charged `units` minus what was reserved (given back when the task used
   * less). Settle once per admission; `usageOf(task).report` does it for you.
   */
  reportUsage(
    request: RequestIdentity,
    units: number,
    options?: { readonly settle?: boolean },
  ): Promise<void>;
  /** A task's usage reporter (task id or `RequestContext`), charging whoever started it: `server/task-usage.ts`. */
  usageOf(task: string | TaskRef): TaskUsageReporter;
  /**
   * Decides the resubscription a copy of a still-running streamed message becomes (after
   * {@link admit} answered `duplicate`): a stream like any other, decided under the policies of
   * SubscribeToTask and the stream limits of SendStreamingMessage (its overload policies, and
   * concurrency policies whose leases are held until the response ends), never charged a rate
   * of SendStreamingMessage again. The ticket's leases end with the response.
   */
  admitResubscription(request: AdmissionRequest): AdmissionOutcome | Promise<AdmissionOutcome>;
  /** REST wire form of a rejection. */
  encodeRest(rejection: Rejection, limits?: readonly LimitState[]): HttpRejectionResponse;
  /** JSON-RPC wire form of a rejection. */
  encodeJsonRpc(
    rejection: Rejection,
    id: string | number | null,
    limits?: readonly LimitState[],
    mirrorHttpStatus?: boolean,
  ): HttpRejectionResponse;
  /** gRPC wire form of a rejection. */
  encodeGrpc(rejection: Rejection, limits?: readonly LimitState[]): GrpcRejectionStatus;
  /**
   * Wraps the SDK's `ExecutionEventBusManager` (pass it as the 4th `DefaultRequestHandler`
   * argument) so task leases last until the task's terminal state and retried messages map to
   * their task. Without it, task leases end with the response. The wrapper hands the SDK a
   * pass-through bus and watches what is published on it; a custom manager works as long as the
   * bus it creates is the one events are published on and finished.
   */
  trackTasks<M extends EventBusManagerLike>(inner: M): M;
  /** Leases this process currently holds (open responses and live tasks). */
  leasesHeld(): number;
  /** Tasks whose leases are currently held. */
  tasksTracked(): number;
  /** Stops timers and closes the store. */
  close(): Promise<void>;
}
