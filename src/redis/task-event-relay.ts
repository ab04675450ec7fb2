/**
 * @module task-event-relay
 * `createTaskEventRelay`: resubscribe to and cancel a task from any replica, through Redis Streams.
 */

import { randomBytes } from 'node:crypto';
import type { EventBusManagerLike } from '../core/task-events.js';
import { TERMINAL_TASK_STATES } from '../core/task-events.js';
import { type TappedBus, type TaskTapSubscriber, taskTapOf } from '../core/task-tap.js';
import { encode, isTerminal, toStreamResponse } from './relay-events.js';
import { RelayReader } from './relay-reader.js';
import type {
  RelayedRequestHandler,
  TaskEventRelay,
  TaskEventRelayOptions,
} from './task-event-relay-options.js';

/** A task run by this replica. */
interface OwnedTask {
  readonly bus: TappedBus;
  readonly context: unknown;
  /**
   * Its executor returned and the SDK kept its bus alive (input-required, auth-required): its
   * owner key is written once for `eventTtlMs` (and again when it publishes), never renewed.
   */
  idle: boolean;
  /** Runs of its executor started here (a settle only idles the run it was offered for). */
  runs: number;
}

/**
 * Creates the relay for one replica. The SDK keeps a task's event bus in the process that runs it,
 * so on its own a `SubscribeToTask` (or a deduplicated streaming copy) landing on another replica
 * gets one snapshot and an end, and a `CancelTask` there cannot reach the executor. The relay:
 *
 * - **owner side** (`eventBusManager`): every event published on a task's bus is also appended to
 *   the task's stream (`XADD`, capped, with a TTL) and the end of the flow is marked; the replica
 *   holds a short owner key per task whose executor runs here (renewed; a task left input-required
 *   or auth-required after its executor returned keeps one long key, written once) and runs the
 *   cancel requests of its inbox stream with the SDK's own `cancelTask`, so the limiter's leases
 *   are released by the task's terminal state;
 * - **serving side** (`requestHandler`): `resubscribe` of a task owned elsewhere yields the stored
 *   snapshot, then the owner's events until the terminal one (or until the owner key lapses);
 *   `cancelTask` sends a cancel request to the owner's inbox, waits for the terminal event, then
 *   answers as the SDK does; `getTask` of a task whose events exist but that the owner has not
 *   written to the task store yet waits for it (up to a second) instead of answering "not found".
 *
 * One Redis node (streams of different tasks are read in one `XREAD`, so not across Cluster
 * slots); one blocking connection per replica (`duplicate()`).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const relay = createTaskEventRelay({ client: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') });
 * ```
 */
export function createTaskEventRelay(options: TaskEventRelayOptions): TaskEventRelay {
  const client = options.client;
  const prefix = options.keyPrefix ?? 'a2arl:';
  const ownerTtlMs = options.ownerTtlMs ?? 10_000;
  const eventTtlMs = options.eventTtlMs ?? 3_600_000;
  const maxEvents = options.maxEventsPerTask ?? 1000;
  const cancelTimeoutMs = options.cancelTimeoutMs ?? 10_000;
  for (const [name, value] of Object.entries({
    ownerTtlMs,
    eventTtlMs,
    maxEvents,
    cancelTimeoutMs,
  })) {
    if (!(value > 0 && Number.isFinite(value))) {
      throw new RangeError(`createTaskEventRelay: ${name} must be a positive number, got ${value}`);
    }
  }
  const replicaId = randomBytes(8).toString('hex');
  const streamKey = (taskId: string) => `${prefix}re{${taskId}}`;
  const ownerKey = (taskId: string) => `${prefix}ro{${taskId}}`;
  const inboxKey = (replica: string) => `${prefix}ri{${replica}}`;
  const myInbox = inboxKey(replicaId);

  const owned = new Map<string, OwnedTask>();
  let handler: RelayedRequestHandler | undefined;
  let closed = false;
  const ignore = () => undefined;

  // Owner side.
  const append = (taskId: string, fields: string[]): void => {
    const key = streamKey(taskId);
    client
      .multi()
      .xadd(key, 'MAXLEN', '~', String(maxEvents), '*', ...fields)
      .pexpire(key, eventTtlMs)
      .exec()
      .catch(ignore);
  };
  const claim = (taskId: string): void => {
    client.set(ownerKey(taskId), replicaId, 'PX', ownerTtlMs).catch(ignore);
  };
  // Tasks whose executor runs here: their owner keys are renewed every third of their TTL.
  const running = new Set<string>();
  const renewTimer = setInterval(() => {
    if (running.size === 0) return;
    const batch = client.multi();
    for (const taskId of running) batch.set(ownerKey(taskId), replicaId, 'PX', ownerTtlMs);
    batch.exec().catch(ignore);
  }, ownerTtlMs / 3);
  renewTimer.unref();
  /**
   * The executor of an owned task returned and its bus lives on (the SDK keeps it for a follow-up
   * message): nothing runs to renew for, so the owner key is written once, as long as the task's
   * events stay readable, and the task leaves the renewed set. Cancel requests still reach this
   * replica's inbox through that key; a follow-up message here makes the task run again.
   */
  const settleIdle = (taskId: string, run: number): void => {
    const task = owned.get(taskId);
    if (task === undefined || task.idle || task.runs !== run) return;
    task.idle = true;
    running.delete(taskId);
    client.set(ownerKey(taskId), replicaId, 'PX', eventTtlMs).catch(ignore);
  };

  /** The owner side, subscribed to the SDK manager's task tap (`eventBusManager`). */
  const owner: TaskTapSubscriber = {
    open: (taskId, context) => (tap) => {
      const bus = tap();
      const known = owned.get(taskId);
      if (known !== undefined && known.bus === bus) {
        known.runs++;
        if (known.idle) {
          // A follow-up message runs the task here again: renewed while it runs.
          known.idle = false;
          running.add(taskId);
          claim(taskId);
        }
        return;
      }
      const relay = (fields: string[]): void => {
        append(taskId, fields);
        // Events after the executor returned (auth-required resumed out of band): the owner
        // key lives on as long as they do.
        if (owned.get(taskId)?.idle === true) {
          client.set(ownerKey(taskId), replicaId, 'PX', eventTtlMs).catch(ignore);
        }
      };
      bus.watch({
        event: (event) => relay(['e', encode({ kind: event?.kind, data: event?.data })]),
        finished: () => relay(['f', '1']),
      });
      owned.set(taskId, { bus, context, idle: false, runs: 0 });
      running.add(taskId);
      claim(taskId);
    },
    cleanedUp: (taskId) => {
      running.delete(taskId);
      if (owned.delete(taskId)) client.del(ownerKey(taskId)).catch(ignore);
    },
    // The SDK offers every bus to `settleByTaskId` when the task's executor returns, then cleans
    // it up at once unless the task's state keeps it alive (the tap always offers it), so the
    // relay learns that the executor returned: a bus still owned a moment later is idle.
    settled: (taskId) => {
      const task = owned.get(taskId);
      if (task !== undefined) {
        const run = task.runs;
        queueMicrotask(() => settleIdle(taskId, run));
      }
    },
  };

  const onCancelRequest = (taskId: string): void => {
    const task = owned.get(taskId);
    if (task === undefined || handler === undefined) return;
    const tenant = (task.context as { tenant?: unknown } | undefined)?.tenant;
    handler
      .cancelTask({ id: taskId, tenant: typeof tenant === 'string' ? tenant : '' }, task.context)
      .catch(ignore);
  };

  // One blocking reader per replica: its inbox and the streams of remote tasks watched here.
  const reader = new RelayReader({
    client,
    prefix,
    inbox: myInbox,
    streamKey,
    ownerKey,
    onCancelRequest,
  });

  /**
   * `getTask`, waiting out the moment between a task's first event (when deduplication learns its
   * id) and the owner's write of it to the task store: a task whose events exist (here or in
   * Redis) but is not stored yet is read again for up to a second before "not found" stands.
   */
  // biome-ignore lint/suspicious/noExplicitAny: SDK request/context
  const getTask = async (inner: RelayedRequestHandler, params: any, context: any) => {
    const taskId = String(params?.id ?? '');
    for (let attempt = 0; ; attempt++) {
      try {
        return await inner.getTask(params, context);
      } catch (error) {
        if (attempt >= 10) throw error;
        const known =
          owned.has(taskId) || (await client.exists(streamKey(taskId)).catch(() => 0)) === 1;
        if (!known) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  const ownerOf = async (taskId: string): Promise<string | null> => {
    try {
      return await client.get(ownerKey(taskId));
    } catch {
      return null;
    }
  };

  async function* remoteResubscribe(
    inner: RelayedRequestHandler,
    // biome-ignore lint/suspicious/noExplicitAny: SDK request/context
    params: any,
    // biome-ignore lint/suspicious/noExplicitAny: SDK request/context
    context: any,
  ): AsyncGenerator<unknown, void, undefined> {
    const taskId = String(params?.id ?? '');
    const owner = owned.has(taskId) ? replicaId : await ownerOf(taskId);
    if (owner === null || owner === replicaId) {
      yield* inner.resubscribe(params, context);
      return;
    }
    const { lastId, tail } = await reader.tailOf(taskId);
    const events = reader.watch(taskId, lastId);
    try {
      const task = await getTask(inner, { id: taskId, tenant: params?.tenant ?? '' }, context);
      const state = task?.status?.state as number | undefined;
      if (state !== undefined && TERMINAL_TASK_STATES.has(state)) {
        yield* inner.resubscribe(params, context); // the SDK's own answer for a finished task
        return;
      }
      yield { payload: { $case: 'task', value: task } };
      // The store can lag the stream: a terminal event already appended ends the stream now.
      const ended = tail.find((e) => e.kind === 'event' && isTerminal(e.event));
      if (ended !== undefined && ended.kind === 'event') {
        const response = toStreamResponse(ended.event, taskId);
        if (response !== undefined) yield response;
        return;
      }
      for (;;) {
        const entry = await events.next();
        if (entry === undefined || entry.kind === 'finished') return;
        const response = toStreamResponse(entry.event, taskId);
        if (response !== undefined) yield response;
        if (isTerminal(entry.event)) return;
      }
    } finally {
      events.close();
    }
  }

  // biome-ignore lint/suspicious/noExplicitAny: SDK request/context
  const remoteCancel = async (inner: RelayedRequestHandler, params: any, context: any) => {
    const taskId = String(params?.id ?? '');
    const owner = owned.has(taskId) ? replicaId : await ownerOf(taskId);
    if (owner === null || owner === replicaId) return inner.cancelTask(params, context);
    // Only a caller who may see the task may cancel it (the SDK's task-store scoping).
    const task = await getTask(inner, { id: taskId, tenant: params?.tenant ?? '' }, context);
    const state = task?.status?.state as number | undefined;
    if (state !== undefined && TERMINAL_TASK_STATES.has(state)) {
      return inner.cancelTask(params, context);
    }
    const { lastId } = await reader.tailOf(taskId);
    const events = reader.watch(taskId, lastId);
    try {
      await client.xadd(inboxKey(owner), 'MAXLEN', '~', '1000', '*', 't', taskId);
      const deadline = new Promise<'timeout'>((resolve) => {
        const timer = setTimeout(() => resolve('timeout'), cancelTimeoutMs);
        timer.unref();
      });
      const ended = (async () => {
        for (;;) {
          const entry = await events.next();
          if (entry === undefined || entry.kind === 'finished' || isTerminal(entry.event)) return;
        }
      })();
      await Promise.race([ended, deadline]);
    } finally {
      events.close();
    }
    // The owner has ended it; its task store write may trail the event by a moment. Then the
    // SDK answers with the stored task. If the owner did not answer in time, the SDK marks it
    // canceled in the store, as without a relay.
    for (let i = 0; i < 20; i++) {
      const stored = await inner.getTask({ id: taskId, tenant: params?.tenant ?? '' }, context);
      const now = stored?.status?.state as number | undefined;
      if (now !== undefined && TERMINAL_TASK_STATES.has(now)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    return inner.cancelTask(params, context);
  };

  return {
    replicaId,
    eventBusManager<M extends EventBusManagerLike>(inner: M): M {
      const tap = taskTapOf(inner);
      tap.subscribe(owner);
      return tap as unknown as M;
    },
    requestHandler<H extends RelayedRequestHandler>(inner: H): H {
      handler = inner;
      return new Proxy(inner, {
        get(target, property, receiver) {
          if (property === 'resubscribe') {
            // biome-ignore lint/suspicious/noExplicitAny: SDK request/context
            return (params: any, context: any) => remoteResubscribe(target, params, context);
          }
          if (property === 'getTask') {
            // biome-ignore lint/suspicious/noExplicitAny: SDK request/context
            return (params: any, context: any) => getTask(target, params, context);
          }
          if (property === 'cancelTask') {
            // biome-ignore lint/suspicious/noExplicitAny: SDK request/context
            return (params: any, context: any) => remoteCancel(target, params, context);
          }
          const value = Reflect.get(target, property, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    },
    ownedTasks: () => owned.size,
    runningTasks: () => running.size,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(renewTimer);
      running.clear();
      await reader.close();
      if (owned.size > 0) {
        await client.del(...[...owned.keys()].map(ownerKey)).catch(ignore);
      }
    },
  };
}
