/**
 * @module rate-limited-push-sender
 * `RateLimitedPushSender`: a drop-in `PushNotificationSender` for `@a2a-js/sdk` (the 6th argument
 * of `DefaultRequestHandler`) that treats the caller's webhook the way our client treats an agent
 * (DESIGN §6). It POSTs the same body, media type and authentication header as the SDK's
 * `DefaultPushNotificationSender`, but each POST runs through the shared {@link RetryScheduler}:
 * one gate per webhook URL across all tasks, 429/503 honoured with RetryInfo, `Retry-After`
 * (seconds or HTTP-date) and `RateLimit`, jittered backoff when no delay is given, a deadline per
 * notification. Per-task order is kept, queued status updates of a task are coalesced (latest
 * state wins), and each webhook's queue is bounded (notification-queue.ts). A webhook's failures
 * never reach the task: `send` never rejects, and every notification ends delivered or counted as
 * dropped.
 */

import { TaskState } from '@a2a-js/sdk';
import {
  type PushNotificationSender,
  type PushNotificationSerializer,
  type PushNotificationStore,
  type ServerCallContext,
  type StoredPushNotificationConfig,
  V1PushNotificationSerializer,
} from '@a2a-js/sdk/server';
import { DEFAULT_RETRY_RULES, type RetryRules } from '../client/plan-retry.js';
import { isRetryBudgetExceededError, isRetryError } from '../client/retry-errors.js';
import { type AttemptOutcome, RetryScheduler } from '../client/retry-scheduler.js';
import { type Sleep, systemClock, systemSleep } from '../client/sleep.js';
import type { Clock } from '../core/clock.js';
import { extractRetryHint } from '../wire/extract-retry-hint.js';
import { readRateLimitHeaders } from '../wire/ratelimit-headers.js';
import type { RetryHint } from '../wire/retry-hint.js';
import { NotificationQueue, type QueuedNotification } from './notification-queue.js';
import {
  PUSH_DROP_REASONS,
  type PushDelivery,
  type PushDrop,
  type PushDropReason,
  type PushPayloadKind,
} from './push-drops.js';

type StreamResponse = Parameters<PushNotificationSender['send']>[0];
type Task = NonNullable<Parameters<PushNotificationSender['send']>[2]>;

/**
 * Retry tunables of the sender (see `RetryRules`). All durations in milliseconds.
 *
 * @example
 * ```ts
 * const retry: PushRetryRules = { maxRetries: 20, backoffCapMs: 30_000 };
 * ```
 */
export type PushRetryRules = Partial<
  Pick<RetryRules, 'maxRetries' | 'maxSingleWaitMs' | 'jitterMs' | 'backoffBaseMs' | 'backoffCapMs'>
>;

/**
 * Options of {@link RateLimitedPushSender}. All durations in milliseconds.
 *
 * @example
 * ```ts
 * const options: RateLimitedPushSenderOptions = {
 *   postTimeoutMs: 10_000, deliveryDeadlineMs: 300_000, maxQueuedPerWebhook: 1_000,
 *   onDrop: (drop) => drops.inc({ reason: drop.reason }),
 * };
 * ```
 */
export interface RateLimitedPushSenderOptions {
  /** Timeout of one POST, response body included. @defaultValue 10_000 */
  readonly postTimeoutMs?: number;
  /** A notification not delivered this long after `send` is dropped. @defaultValue 300_000 */
  readonly deliveryDeadlineMs?: number;
  /** Queued notifications per webhook URL before status updates are dropped. @defaultValue 1_000 */
  readonly maxQueuedPerWebhook?: number;
  /** POSTs in flight (or waiting to be re-sent) per webhook URL. @defaultValue 4 */
  readonly maxConcurrentPerWebhook?: number;
  /**
   * Retry rules. Defaults: `maxRetries` 100, `maxSingleWaitMs` = `deliveryDeadlineMs` (the
   * deadline decides), jitter uniform(0, 1 s) on top of a hint, full-jitter backoff base 500 ms,
   * cap 60 s without one.
   */
  readonly retry?: PushRetryRules;
  /**
   * Header for the legacy `token` of a push config without `authentication` (as the SDK).
   * @defaultValue 'X-A2A-Notification-Token'
   */
  readonly tokenHeaderName?: string;
  /**
   * Serializers per A2A wire version a config was registered over, as the SDK's sender takes
   * them; `'1.0'` defaults to the SDK's `V1PushNotificationSerializer`.
   */
  readonly serializers?: Readonly<Record<string, PushNotificationSerializer | undefined>>;
  /** The fetch that sends. @defaultValue globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** Time source. @defaultValue systemClock */
  readonly clock?: Clock;
  /** Waits between attempts and in the gate. @defaultValue systemSleep */
  readonly sleep?: Sleep;
  /** Uniform in [0, 1), for jitter and backoff. @defaultValue Math.random */
  readonly random?: () => number;
  /**
   * The signal that times out one POST after `ms`. @defaultValue AbortSignal.timeout (real time:
   * it guards real I/O even when `clock`/`sleep` are virtual)
   */
  readonly timeoutSignal?: (ms: number) => AbortSignal;
  /** Called once per dropped notification (metrics hook; exceptions are swallowed). */
  readonly onDrop?: (drop: PushDrop) => void;
  /** Called once per delivered notification (metrics hook; exceptions are swallowed). */
  readonly onDelivered?: (delivery: PushDelivery) => void;
  /** Called when a task's push configs could not be loaded or a payload not serialized. */
  readonly onError?: (error: unknown, taskId: string) => void;
}

/**
 * Counters of a sender. Every accepted notification ends in `delivered` or one `dropped` reason
 * (or is still `queued` / `inFlight`).
 *
 * @example
 * ```ts
 * const { delivered, dropped, posts } = sender.stats();
 * ```
 */
export interface PushSenderStats {
  /** Notifications accepted (one per event and push config). */
  readonly accepted: number;
  readonly delivered: number;
  /** Dropped notifications by reason. */
  readonly dropped: Readonly<Record<PushDropReason, number>>;
  /** HTTP POSTs sent, re-sends included. */
  readonly posts: number;
  /** Re-sends. */
  readonly retries: number;
  /** Notifications waiting in queues now. */
  readonly queued: number;
  /** Notifications being delivered now (sending, or waiting to be re-sent). */
  readonly inFlight: number;
  /** Webhook URLs with work now. */
  readonly webhooks: number;
  /** Push-config loads or serializations that failed. */
  readonly errors: number;
}

interface Delivery {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

type Notification = QueuedNotification<Delivery>;

/** What one POST came back with. */
interface PostResult {
  readonly status: number;
}

const TERMINAL_STATES: ReadonlySet<number> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** The group name of webhook POSTs in the scheduler's gates (until a policy names itself). */
const PUSH_METHOD = 'PushNotification';
/** Wire version assumed for configs of a store without `loadWithMetadata` (as the SDK). */
const LEGACY_WIRE_VERSION = '0.3';

/**
 * Whether a `TaskState` number is terminal (completed, failed, canceled, rejected).
 *
 * @example
 * ```ts
 * isTerminalTaskState(TaskState.TASK_STATE_COMPLETED); // true
 * isTerminalTaskState(TaskState.TASK_STATE_INPUT_REQUIRED); // false (interrupted, not terminal)
 * ```
 */
export function isTerminalTaskState(state: number | undefined): boolean {
  return state !== undefined && TERMINAL_STATES.has(state);
}

/**
 * A `PushNotificationSender` that honours webhooks' rate limits and coalesces updates.
 *
 * What reaches the webhook:
 * - exactly the SDK's POST: `Content-Type: application/a2a+json` (or the registered serializer's),
 *   body = one `StreamResponse`, `Authorization: <scheme> <credentials>` from the config's
 *   `authentication`, else its legacy `token` in `X-A2A-Notification-Token`;
 * - per task and config, in the order the agent emitted them, one at a time;
 * - **coalesced**: a status update still queued when a newer status update of the same task
 *   arrives is replaced by it — the latest state wins and the intermediate status messages are
 *   dropped (counted as `coalesced`). A terminal state is never replaced; task snapshots,
 *   messages and artifact updates are never coalesced;
 * - paced: one gate per webhook URL across tasks; a 429/503 closes it until the webhook's delay
 *   (RetryInfo, `Retry-After` seconds or HTTP-date, `RateLimit` t) and the rejected POST is
 *   re-sent unchanged after that delay plus jitter; 5xx and network errors back off (full
 *   jitter); other 4xx answers are final (`rejected`);
 * - bounded: past `maxQueuedPerWebhook` queued notifications, the oldest non-terminal status
 *   updates are dropped first (`queue-full`); terminal states, artifacts and messages are never
 *   dropped to make room. Each POST times out after `postTimeoutMs`; a notification not
 *   delivered within `deliveryDeadlineMs` is dropped (`deadline`).
 *
 * `send` resolves once the notification is queued and never rejects. Use `drain()` to wait for
 * the queues to empty and `close()` to stop.
 *
 * @example
 * ```ts
 * import { DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore } from '@a2a-js/sdk/server';
 * import { RateLimitedPushSender } from 'a2a-ratelimit/push';
 *
 * const pushStore = new InMemoryPushNotificationStore();
 * const sender = new RateLimitedPushSender(pushStore, { onDrop: (d) => drops.inc({ reason: d.reason }) });
 * const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, undefined, pushStore, sender);
 * process.on('SIGTERM', async () => { await sender.drain(); await sender.close(); });
 * ```
 */
export class RateLimitedPushSender implements PushNotificationSender {
  private readonly store: PushNotificationStore;
  private readonly scheduler: RetryScheduler;
  private readonly clock: Clock;
  private readonly fetchImpl: typeof fetch | undefined;
  private readonly timeoutSignal: (ms: number) => AbortSignal;
  private readonly postTimeoutMs: number;
  private readonly deliveryDeadlineMs: number;
  private readonly maxQueued: number;
  private readonly maxConcurrent: number;
  private readonly tokenHeaderName: string;
  private readonly serializers = new Map<string, PushNotificationSerializer>();
  private readonly fallbackSerializer: PushNotificationSerializer;
  private readonly hooks: Pick<RateLimitedPushSenderOptions, 'onDrop' | 'onDelivered' | 'onError'>;
  private readonly webhooks = new Map<string, NotificationQueue<Delivery>>();
  /** Per task: the chain of config loads, so that notifications are queued in `send` order. */
  private readonly loads = new Map<string, Promise<void>>();
  private readonly closing = new AbortController();
  private readonly idleWaiters: (() => void)[] = [];
  private pendingLoads = 0;
  private readonly counters = {
    accepted: 0,
    delivered: 0,
    posts: 0,
    retries: 0,
    errors: 0,
    dropped: Object.fromEntries(Object.values(PUSH_DROP_REASONS).map((r) => [r, 0])) as Record<
      PushDropReason,
      number
    >,
  };

  /**
   * @param store - Where the agent's push configs live: the same store given to
   *   `DefaultRequestHandler` (its 5th argument).
   * @param options - Limits, hooks and injectable time / fetch; see {@link RateLimitedPushSenderOptions}.
   */
  constructor(store: PushNotificationStore, options: RateLimitedPushSenderOptions = {}) {
    this.store = store;
    this.clock = options.clock ?? systemClock;
    this.fetchImpl = options.fetch;
    this.timeoutSignal = options.timeoutSignal ?? ((ms) => AbortSignal.timeout(ms));
    this.postTimeoutMs = positive(options.postTimeoutMs, 10_000);
    this.deliveryDeadlineMs = positive(options.deliveryDeadlineMs, 300_000);
    this.maxQueued = positive(options.maxQueuedPerWebhook, 1_000);
    this.maxConcurrent = Math.max(1, Math.floor(positive(options.maxConcurrentPerWebhook, 4)));
    this.tokenHeaderName = options.tokenHeaderName ?? 'X-A2A-Notification-Token';
    this.hooks = {
      ...(options.onDrop === undefined ? {} : { onDrop: options.onDrop }),
      ...(options.onDelivered === undefined ? {} : { onDelivered: options.onDelivered }),
      ...(options.onError === undefined ? {} : { onError: options.onError }),
    };
    const v1 = new V1PushNotificationSerializer();
    this.serializers.set('1.0', v1);
    for (const [version, serializer] of Object.entries(options.serializers ?? {})) {
      if (serializer !== undefined) this.serializers.set(version, serializer);
    }
    this.fallbackSerializer = this.serializers.get('1.0') ?? v1;
    const retry = options.retry ?? {};
    this.scheduler = new RetryScheduler({
      maxRetries: retry.maxRetries ?? 100,
      maxSingleWaitMs: retry.maxSingleWaitMs ?? this.deliveryDeadlineMs,
      jitterMs: retry.jitterMs ?? DEFAULT_RETRY_RULES.jitterMs,
      backoffBaseMs: retry.backoffBaseMs ?? DEFAULT_RETRY_RULES.backoffBaseMs,
      backoffCapMs: retry.backoffCapMs ?? DEFAULT_RETRY_RULES.backoffCapMs,
      budgetMs: Number.POSITIVE_INFINITY, // each call carries its own deadline
      clock: this.clock,
      sleep: options.sleep ?? systemSleep,
      ...(options.random === undefined ? {} : { random: options.random }),
    });
  }

  /**
   * Queues one event for every push config of its task and returns. Never rejects: a failing
   * store, serializer or webhook is counted (and reported to the hooks), never thrown into the SDK.
   * Events without a task (stand-alone messages) are ignored, as by the SDK.
   */
  async send(
    streamResponse: StreamResponse,
    context: ServerCallContext,
    task?: Task,
  ): Promise<void> {
    let taskId = '';
    try {
      taskId = taskIdOf(streamResponse);
      if (taskId === '' || this.closing.signal.aborted) return;
      const acceptedAtMs = this.clock.nowMs();
      this.pendingLoads++;
      const previous = this.loads.get(taskId) ?? Promise.resolve();
      const run = () => this.accept(streamResponse, context, task, taskId, acceptedAtMs);
      const step = previous.then(run, run);
      this.loads.set(taskId, step);
      try {
        await step;
      } finally {
        this.pendingLoads--;
        if (this.loads.get(taskId) === step) this.loads.delete(taskId);
        this.notifyIfIdle();
      }
    } catch (error) {
      this.reportError(error, taskId);
    }
  }

  /** Counters so far (a snapshot). */
  stats(): PushSenderStats {
    let queued = 0;
    let inFlight = 0;
    for (const queue of this.webhooks.values()) {
      queued += queue.size;
      inFlight += queue.inDelivery;
    }
    return {
      accepted: this.counters.accepted,
      delivered: this.counters.delivered,
      dropped: { ...this.counters.dropped },
      posts: this.counters.posts,
      retries: this.counters.retries,
      queued,
      inFlight,
      webhooks: this.webhooks.size,
      errors: this.counters.errors,
    };
  }

  /**
   * Resolves when every notification accepted so far is delivered or dropped (new ones may still
   * come in; it waits for those too). Never rejects.
   *
   * @example
   * ```ts
   * await Promise.race([sender.drain(), setTimeout(30_000)]);
   * ```
   */
  drain(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops: later `send` calls are ignored, queued notifications are dropped (`closed`), waits and
   * POSTs in progress are aborted. Resolves when nothing is left running. Idempotent.
   *
   * @example
   * ```ts
   * await sender.close();
   * ```
   */
  async close(): Promise<void> {
    if (!this.closing.signal.aborted) {
      this.closing.abort(new Error('push sender closed'));
      for (const queue of this.webhooks.values()) {
        for (const { notification, reason } of queue.clear()) {
          this.drop(notification, reason, { attempts: 0 });
        }
      }
    }
    await this.drain();
  }

  private isIdle(): boolean {
    if (this.pendingLoads > 0) return false;
    for (const queue of this.webhooks.values()) if (!queue.isIdle()) return false;
    return true;
  }

  private notifyIfIdle(): void {
    if (this.idleWaiters.length === 0 || !this.isIdle()) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Loads the task's push configs and queues one notification per config. Never throws. */
  private async accept(
    streamResponse: StreamResponse,
    context: ServerCallContext,
    task: Task | undefined,
    taskId: string,
    acceptedAtMs: number,
  ): Promise<void> {
    let configs: StoredPushNotificationConfig[];
    try {
      configs = await this.loadConfigs(taskId, context);
    } catch (error) {
      this.reportError(error, taskId);
      return;
    }
    if (this.closing.signal.aborted) return;
    const payload = streamResponse.payload;
    if (payload === undefined) return;
    const kind: PushPayloadKind = payload.$case;
    const state =
      payload.$case === 'task' || payload.$case === 'statusUpdate'
        ? payload.value.status?.state
        : undefined;
    for (const { config, wireVersion } of configs) {
      let delivery: Delivery;
      try {
        const { body, contentType } = this.serializerFor(wireVersion).serialize(
          streamResponse,
          task,
        );
        delivery = {
          url: config.url,
          headers: { 'Content-Type': contentType, ...this.authHeaders(config) },
          body,
        };
      } catch (error) {
        this.reportError(error, taskId);
        continue;
      }
      this.counters.accepted++;
      this.enqueue({
        lane: `${config.id}\u0000${taskId}`,
        taskId,
        kind,
        state,
        terminal: isTerminalTaskState(state),
        acceptedAtMs,
        deadlineMs: acceptedAtMs + this.deliveryDeadlineMs,
        payload: delivery,
      });
    }
  }

  private async loadConfigs(
    taskId: string,
    context: ServerCallContext,
  ): Promise<StoredPushNotificationConfig[]> {
    if (this.store.loadWithMetadata) return await this.store.loadWithMetadata(taskId, context);
    const plain = await this.store.load(taskId, context);
    const wireVersion = context.requestedVersion || LEGACY_WIRE_VERSION;
    return plain.map((config) => ({ config, wireVersion }));
  }

  private serializerFor(wireVersion: string): PushNotificationSerializer {
    return this.serializers.get(wireVersion) ?? this.fallbackSerializer;
  }

  /** The SDK's rule: `authentication` → `Authorization`; else `token` → the legacy header. */
  private authHeaders(config: StoredPushNotificationConfig['config']): Record<string, string> {
    const auth = config.authentication;
    if (auth?.scheme && auth.credentials) {
      return { Authorization: `${auth.scheme} ${auth.credentials}` };
    }
    return config.token ? { [this.tokenHeaderName]: config.token } : {};
  }

  private enqueue(notification: Notification): void {
    const url = notification.payload.url;
    let queue = this.webhooks.get(url);
    if (queue === undefined) {
      queue = new NotificationQueue<Delivery>(this.maxQueued);
      this.webhooks.set(url, queue);
    }
    for (const { notification: dropped, reason } of queue.enqueue(
      notification,
      this.clock.nowMs(),
    )) {
      this.drop(dropped, reason, { attempts: 0 });
    }
    this.pump(url, queue);
  }

  /** Starts deliveries while the webhook has room for more in flight. */
  private pump(url: string, queue: NotificationQueue<Delivery>): void {
    while (queue.inDelivery < this.maxConcurrent && !this.closing.signal.aborted) {
      const notification = queue.take();
      if (notification === undefined) break;
      void this.deliver(notification).finally(() => {
        queue.finish(notification.lane);
        if (queue.isIdle() && this.webhooks.get(url) === queue) this.webhooks.delete(url);
        else this.pump(url, queue);
        this.notifyIfIdle();
      });
    }
  }

  /** Delivers one notification through the scheduler; reports how it ended. Never rejects. */
  private async deliver(notification: Notification): Promise<void> {
    const { url, headers, body } = notification.payload;
    if (this.clock.nowMs() >= notification.deadlineMs) {
      this.drop(notification, PUSH_DROP_REASONS.deadline, { attempts: 0 });
      return;
    }
    let attempts = 0;
    let lastStatus: number | undefined;
    let lastHint: RetryHint | undefined;
    const closing = this.closing.signal;
    const attempt = async (attemptIndex: number): Promise<AttemptOutcome<PostResult>> => {
      attempts++;
      this.counters.posts++;
      if (attemptIndex > 0) this.counters.retries++;
      const timeout = this.timeoutSignal(this.postTimeoutMs);
      // One controller per POST (not AbortSignal.any, whose dependants the long-lived closing
      // signal would keep until it fires).
      const controller = new AbortController();
      const onAbort = (): void => {
        controller.abort(closing.aborted ? closing.reason : timeout.reason);
      };
      closing.addEventListener('abort', onAbort, { once: true });
      timeout.addEventListener('abort', onAbort, { once: true });
      if (closing.aborted || timeout.aborted) onAbort();
      const signal = controller.signal;
      try {
        const response = await (this.fetchImpl ?? globalThis.fetch)(url, {
          method: 'POST',
          headers,
          body,
          signal,
        });
        lastStatus = response.status;
        const nowMs = this.clock.nowMs();
        if (response.ok) {
          await response.arrayBuffer().catch(() => undefined); // frees the connection
          return {
            ok: true,
            value: { status: response.status },
            rateLimit: readRateLimitHeaders(response.headers, nowMs),
          };
        }
        const text = await response.text().catch(() => '');
        lastHint = extractRetryHint(
          { kind: 'http', status: response.status, headers: response.headers, body: text },
          this.clock.nowMs(),
        );
        return { ok: false, hint: lastHint, failure: { value: { status: response.status } } };
      } catch (error) {
        if (closing.aborted) throw error;
        lastStatus = undefined;
        lastHint = timeout.aborted
          ? {
              kind: 'transient-unknown',
              message: `webhook did not answer within ${this.postTimeoutMs} ms`,
            }
          : extractRetryHint({ kind: 'error', error }, this.clock.nowMs());
        return { ok: false, hint: lastHint, failure: { error } };
      } finally {
        closing.removeEventListener('abort', onAbort);
        timeout.removeEventListener('abort', onAbort);
      }
    };

    try {
      const result = await this.scheduler.run(
        {
          agent: url,
          caller: '',
          method: PUSH_METHOD,
          signal: closing,
          deadlineMs: notification.deadlineMs,
          repeatable: true,
        },
        attempt,
      );
      if (result.status >= 200 && result.status < 300) {
        this.delivered(notification, attempts);
      } else {
        // The scheduler stopped on the webhook's own answer: final, or repeated too often.
        const reason =
          lastHint?.kind === 'not-retryable'
            ? PUSH_DROP_REASONS.rejected
            : PUSH_DROP_REASONS.retriesExhausted;
        this.drop(notification, reason, { attempts, status: result.status });
      }
    } catch (error) {
      const reason: PushDropReason = closing.aborted
        ? PUSH_DROP_REASONS.closed
        : isRetryBudgetExceededError(error)
          ? PUSH_DROP_REASONS.deadline
          : isRetryError(error) || lastHint?.kind !== 'not-retryable'
            ? PUSH_DROP_REASONS.retriesExhausted
            : PUSH_DROP_REASONS.rejected;
      this.drop(notification, reason, { attempts, status: lastStatus, error });
    }
  }

  private delivered(notification: Notification, attempts: number): void {
    this.counters.delivered++;
    const hook = this.hooks.onDelivered;
    if (hook === undefined) return;
    try {
      hook({
        url: notification.payload.url,
        taskId: notification.taskId,
        kind: notification.kind,
        state: notification.state,
        attempts,
        ageMs: this.clock.nowMs() - notification.acceptedAtMs,
      });
    } catch {
      // A metrics hook must not break delivery.
    }
  }

  private drop(
    notification: Notification,
    reason: PushDropReason,
    detail: { attempts: number; status?: number | undefined; error?: unknown },
  ): void {
    this.counters.dropped[reason]++;
    const hook = this.hooks.onDrop;
    if (hook === undefined) return;
    try {
      hook({
        reason,
        url: notification.payload.url,
        taskId: notification.taskId,
        kind: notification.kind,
        state: notification.state,
        attempts: detail.attempts,
        ageMs: this.clock.nowMs() - notification.acceptedAtMs,
        status: detail.status,
        ...(detail.error === undefined ? {} : { error: detail.error }),
      });
    } catch {
      // A metrics hook must not break delivery.
    }
  }

  private reportError(error: unknown, taskId: string): void {
    this.counters.errors++;
    try {
      this.hooks.onError?.(error, taskId);
    } catch {
      // Nothing may reach the SDK.
    }
  }
}

function taskIdOf(streamResponse: StreamResponse): string {
  const payload = streamResponse?.payload;
  switch (payload?.$case) {
    case 'task':
      return payload.value.id;
    case 'message':
    case 'statusUpdate':
    case 'artifactUpdate':
      return payload.value.taskId;
    default:
      return '';
  }
}

function positive(value: number | undefined, fallback: number): number {
  return value !== undefined && value > 0 ? value : fallback;
}
