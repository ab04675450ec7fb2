/**
 * @module task-event-relay-options
 * The contract of the task-event relay: its options, the request handler it wraps, its interface.
 */

import type { Redis } from 'ioredis';
import type { EventBusManagerLike } from '../core/task-events.js';

/**
 * Options of {@link createTaskEventRelay}.
 */
export interface TaskEventRelayOptions {
  /** An ioredis client (one node). The relay duplicates it once for its blocking reads. */
  readonly client: Redis;
  /** Prefix of the relay's keys; default `a2arl:`. */
  readonly keyPrefix?: string;
  /**
   * How long a replica's claim on a task whose executor runs here lasts unless renewed, ms;
   * default 10,000. A task left interrupted after its executor returned is claimed once for
   * `eventTtlMs` instead.
   */
  readonly ownerTtlMs?: number;
  /** How long a task's events stay readable after the last one, ms; default 3,600,000. */
  readonly eventTtlMs?: number;
  /** Events kept per task (approximate cap); default 1,000. */
  readonly maxEventsPerTask?: number;
  /** How long a cancel on a non-owning replica waits for the owner's terminal event, ms; default 10,000. */
  readonly cancelTimeoutMs?: number;
}

/**
 * The SDK's `A2ARequestHandler`, reduced to what the relay wraps (the rest passes through).
 *
 * @example
 * ```ts
 * const handler: RelayedRequestHandler = new DefaultRequestHandler(card, taskStore, executor, manager);
 * ```
 */
export interface RelayedRequestHandler {
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's request and context types, structurally
  getTask(params: any, context?: any): Promise<any>;
  // biome-ignore lint/suspicious/noExplicitAny: as getTask
  cancelTask(params: any, context?: any): Promise<any>;
  // biome-ignore lint/suspicious/noExplicitAny: as getTask
  resubscribe(params: any, context?: any): AsyncGenerator<any, void, undefined>;
}

/**
 * The relay: wrap the event-bus manager (outermost, around `limiter.trackTasks(...)`) and the
 * request handler built on it; give the wrapped handler to every router and interceptor.
 *
 * @example
 * ```ts
 * const relay = createTaskEventRelay({ client: redis, keyPrefix: 'agent:' });
 * const manager = relay.eventBusManager(limiter.trackTasks(new DefaultExecutionEventBusManager()));
 * const requestHandler = relay.requestHandler(new DefaultRequestHandler(card, taskStore, executor, manager));
 * ```
 */
export interface TaskEventRelay {
  /** This replica's id in owner keys and inbox names. */
  readonly replicaId: string;
  /** Owner side: publishes the tasks run here to Redis and serves cancel requests for them. */
  eventBusManager<M extends EventBusManagerLike>(inner: M): M;
  /** Serving side: resubscribe and cancel of tasks owned by another replica. */
  requestHandler<H extends RelayedRequestHandler>(inner: H): H;
  /** Tasks this replica owns now (running, or left interrupted with their bus kept here). */
  ownedTasks(): number;
  /**
   * Owned tasks whose executor runs now: the only owner keys renewed (every third of
   * `ownerTtlMs`). A task whose executor returned with its bus kept alive (input-required,
   * auth-required) is owned but not renewed: its key was written once for `eventTtlMs`.
   */
  runningTasks(): number;
  /** Stops reading and renewing; drops this replica's owner keys. */
  close(): Promise<void>;
}
