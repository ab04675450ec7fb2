/**
 * @module rate-limited-push-sender
 * `RateLimitedPushSender`: a drop-in `PushNotificationSender` for `@a2a-js/sdk` (the 6th argument
 * of `DefaultRequestHandler`) that treats the caller's webhook the way our client treats an agent
 * (DESIGN §6). It POSTs the same body, media type and authentication header as the SDK's
 * `DefaultPushNotificationSender`, but each POST runs through the shared {@link RetryScheduler}:
 * one gate per webhook URL across all tasks, 429/503 honoured with RetryInfo, `Retry-After`
 * (seconds or HTTP-date) and `RateLimit`, jittered backoff when no delay is given, a deadline per
 * notification. Per-task order is kept, queued status updates of a task are coalesced (latest
 * state wins), and each webhook's queue is bounded (notification-queue.ts). It cannot be turned
 * against the agent's own network: every URL is checked by the webhook policy and POSTs go through
 * the SSRF-safe transport (webhook-policy.ts, webhook-transport.ts); a webhook that keeps failing
 * is left alone for a while by its origin's circuit (circuit-board.ts). A webhook's failures
 * never reach the task: `send` never rejects, and every notification ends delivered or counted as
 * dropped.
 */

import type {
  PushNotificationSender,
  PushNotificationStore,
  ServerCallContext,
  StoredPushNotificationConfig,
} from '@a2a-js/sdk/server';
import { DEFAULT_RETRY_RULES } from '../client/plan-retry.js';
import { isRetryBudgetExceededError, isRetryError } from '../client/retry-errors.js';
import { RetryScheduler } from '../client/retry-scheduler.js';
import { systemClock, systemSleep } from '../client/sleep.js';
import type { Clock } from '../core/clock.js';
import { TERMINAL_TASK_STATES } from '../core/task-events.js';
import { CircuitBoard, type PushCircuitEvent } from './circuit-board.js';
import { NotificationQueue, type QueuedNotification } from './notification-queue.js';
import { PushConfigReader } from './push-configs.js';
import { PUSH_DROP_REASONS, type PushDropReason, type PushPayloadKind } from './push-drops.js';
import {
  consolePushLogger,
  logCircuitChange,
  type PushSenderLogger,
  type PushSenderStats,
  type RateLimitedPushSenderOptions,
} from './push-sender-options.js';
import {
  type AttemptContext,
  type AttemptTrace,
  CircuitPause,
  type WebhookPostSpec,
  webhookAttempt,
} from './webhook-attempt.js';
import type { WebhookPolicy } from './webhook-policy.js';
import {
  createWebhookTransport,
  isWebhookRefusedError,
  toWebhookPolicy,
  WebhookRefusedError,
  type WebhookTransport,
} from './webhook-transport.js';

type StreamResponse = Parameters<PushNotificationSender['send']>[0];
type Task = NonNullable<Parameters<PushNotificationSender['send']>[2]>;

type Notification = QueuedNotification<WebhookPostSpec>;

/** The group name of webhook POSTs in the scheduler's gates (until a policy names itself). */
const PUSH_METHOD = 'PushNotification';

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
  return state !== undefined && TERMINAL_TASK_STATES.has(state);
}

/**
 * A `PushNotificationSender` that honours webhooks' rate limits, coalesces updates and refuses to
 * be pointed at the agent's own network.
 *
 * What reaches the webhook:
 * - exactly the SDK's POST: `Content-Type: application/a2a+json` (or the registered serializer's),
 *   body = one `StreamResponse`, `Authorization: <scheme> <credentials>` from the config's
 *   `authentication`, else its legacy `token` in `X-A2A-Notification-Token`;
 * - only where the webhook policy allows (`policy`): by default public addresses over http(s),
 *   checked on the URL and on every address its host name resolves to, the connection pinned to
 *   the checked address, no redirects followed (a refusal is dropped as `refused`, nothing sent);
 * - per task and config, in the order the agent emitted them, one at a time;
 * - **coalesced**: a status update still queued when a newer status update of the same task
 *   arrives is replaced by it — the latest state wins and the intermediate status messages are
 *   dropped (counted as `coalesced`). A terminal state is never replaced; task snapshots,
 *   messages and artifact updates are never coalesced;
 * - paced: one gate per webhook URL across tasks; a 429/503 closes it until the webhook's delay
 *   (RetryInfo, `Retry-After` seconds or HTTP-date, `RateLimit` t) and the rejected POST is
 *   re-sent unchanged after that delay plus jitter; 5xx and network errors back off (full
 *   jitter); other 4xx and 3xx answers are final (`rejected`);
 * - left alone when it keeps failing: after `circuit.failureThreshold` consecutive failed POSTs to
 *   an origin, nothing is sent there for `circuit.openMs`, then one probe; notifications that
 *   cannot wait that long are dropped (`circuit-open`), the others wait (logged, `onCircuitChange`,
 *   `stats().circuitsOpen`); other webhooks are not delayed;
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
 * import { RateLimitedPushSender, createWebhookPolicy, validatingPushNotificationStore } from 'a2a-ratelimit/push';
 *
 * const policy = createWebhookPolicy({ allow: ['hooks.corp.example'] });
 * const pushStore = validatingPushNotificationStore(new InMemoryPushNotificationStore(), { policy });
 * const sender = new RateLimitedPushSender(pushStore, { policy, onDrop: (d) => drops.inc({ reason: d.reason }) });
 * const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, undefined, pushStore, sender);
 * process.on('SIGTERM', async () => { await sender.drain(); await sender.close(); });
 * ```
 */
export class RateLimitedPushSender implements PushNotificationSender {
  private readonly scheduler: RetryScheduler;
  private readonly clock: Clock;
  private readonly policy: WebhookPolicy;
  private readonly transport: WebhookTransport;
  private readonly ownsTransport: boolean;
  private readonly board: CircuitBoard;
  private readonly attemptContext: AttemptContext;
  private readonly deliveryDeadlineMs: number;
  private readonly maxQueued: number;
  private readonly maxConcurrent: number;
  private readonly configs: PushConfigReader;
  private readonly hooks: Pick<
    RateLimitedPushSenderOptions,
    'onDrop' | 'onDelivered' | 'onError' | 'onCircuitChange'
  >;
  private readonly logger: PushSenderLogger | undefined;
  private readonly webhooks = new Map<string, NotificationQueue<WebhookPostSpec>>();
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
   * @param options - Limits, policy, circuit, hooks and injectable time / transport; see
   *   {@link RateLimitedPushSenderOptions}. A bad circuit option throws a `RangeError`.
   */
  constructor(store: PushNotificationStore, options: RateLimitedPushSenderOptions = {}) {
    this.clock = options.clock ?? systemClock;
    const sleep = options.sleep ?? systemSleep;
    this.policy = toWebhookPolicy(options.policy);
    this.ownsTransport = options.transport === undefined;
    this.transport = options.transport ?? createWebhookTransport({ policy: this.policy });
    this.deliveryDeadlineMs = positive(options.deliveryDeadlineMs, 300_000);
    this.maxQueued = positive(options.maxQueuedPerWebhook, 1_000);
    this.maxConcurrent = Math.max(1, Math.floor(positive(options.maxConcurrentPerWebhook, 4)));
    this.configs = new PushConfigReader(store, {
      tokenHeaderName: options.tokenHeaderName ?? 'X-A2A-Notification-Token',
      ...(options.serializers === undefined ? {} : { serializers: options.serializers }),
    });
    this.hooks = {
      ...(options.onDrop === undefined ? {} : { onDrop: options.onDrop }),
      ...(options.onDelivered === undefined ? {} : { onDelivered: options.onDelivered }),
      ...(options.onError === undefined ? {} : { onError: options.onError }),
      ...(options.onCircuitChange === undefined
        ? {}
        : { onCircuitChange: options.onCircuitChange }),
    };
    this.logger = options.logger === false ? undefined : (options.logger ?? consolePushLogger);
    const circuitOptions = options.circuit ?? {};
    this.board = new CircuitBoard({
      circuit: circuitOptions,
      clock: this.clock,
      sleep,
      onChange: (event) => this.circuitChanged(event, circuitOptions.openMs ?? 30_000),
    });
    this.attemptContext = {
      transport: this.transport,
      board: this.board,
      clock: this.clock,
      timeoutSignal: options.timeoutSignal ?? ((ms) => AbortSignal.timeout(ms)),
      postTimeoutMs: positive(options.postTimeoutMs, 10_000),
      closing: this.closing.signal,
      onPost: (resend) => {
        this.counters.posts++;
        if (resend) this.counters.retries++;
      },
    };
    const retry = options.retry ?? {};
    this.scheduler = new RetryScheduler({
      maxRetries: retry.maxRetries ?? 100,
      maxSingleWaitMs: retry.maxSingleWaitMs ?? this.deliveryDeadlineMs,
      jitterMs: retry.jitterMs ?? DEFAULT_RETRY_RULES.jitterMs,
      backoffBaseMs: retry.backoffBaseMs ?? DEFAULT_RETRY_RULES.backoffBaseMs,
      backoffCapMs: retry.backoffCapMs ?? DEFAULT_RETRY_RULES.backoffCapMs,
      budgetMs: Number.POSITIVE_INFINITY, // each call carries its own deadline
      clock: this.clock,
      sleep,
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
    const circuits = this.board.stats();
    return {
      accepted: this.counters.accepted,
      delivered: this.counters.delivered,
      dropped: { ...this.counters.dropped },
      posts: this.counters.posts,
      retries: this.counters.retries,
      queued,
      inFlight,
      webhooks: this.webhooks.size,
      circuitsOpen: circuits.open,
      circuitOpenings: circuits.openings,
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
   * POSTs in progress are aborted, the default transport's connections are closed. Resolves when
   * nothing is left running. Idempotent.
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
    if (this.ownsTransport) this.transport.close();
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
      configs = await this.configs.load(taskId, context);
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
      let post: WebhookPostSpec;
      const check = this.policy.checkUrl(config.url);
      try {
        const { headers, body } = this.configs.render(config, wireVersion, streamResponse, task);
        post = { url: config.url, origin: check.allowed ? check.url.origin : '', headers, body };
      } catch (error) {
        this.reportError(error, taskId);
        continue;
      }
      this.counters.accepted++;
      const notification: Notification = {
        lane: `${config.id}\u0000${taskId}`,
        taskId,
        kind,
        state,
        terminal: isTerminalTaskState(state),
        acceptedAtMs,
        deadlineMs: acceptedAtMs + this.deliveryDeadlineMs,
        payload: post,
      };
      if (check.allowed) this.enqueue(notification);
      else {
        const error = new WebhookRefusedError(config.url, check);
        this.drop(notification, PUSH_DROP_REASONS.refused, { attempts: 0, error });
      }
    }
  }

  private enqueue(notification: Notification): void {
    const url = notification.payload.url;
    let queue = this.webhooks.get(url);
    if (queue === undefined) {
      queue = new NotificationQueue<WebhookPostSpec>(this.maxQueued);
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
  private pump(url: string, queue: NotificationQueue<WebhookPostSpec>): void {
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

  /**
   * Delivers one notification: waits while its origin's circuit is open, then runs the POST
   * through the scheduler (again after a pause the circuit imposed mid-way); reports how it
   * ended. Never rejects.
   */
  private async deliver(notification: Notification): Promise<void> {
    const post = notification.payload;
    const closing = this.closing.signal;
    const trace: AttemptTrace = { attempts: 0 };
    const detail = () => ({
      attempts: trace.attempts,
      status: trace.lastStatus,
      error: trace.lastError,
    });
    for (;;) {
      if (this.clock.nowMs() >= notification.deadlineMs) {
        const open = this.board.stateOf(post.origin) !== 'closed';
        this.drop(
          notification,
          open ? PUSH_DROP_REASONS.circuitOpen : PUSH_DROP_REASONS.deadline,
          detail(),
        );
        return;
      }
      let mayTry: boolean;
      try {
        mayTry = await this.board.waitFor(post.origin, notification.deadlineMs, closing);
      } catch {
        this.drop(notification, PUSH_DROP_REASONS.closed, detail());
        return;
      }
      if (!mayTry) {
        this.drop(notification, PUSH_DROP_REASONS.circuitOpen, detail());
        return;
      }
      try {
        const result = await this.scheduler.run(
          {
            agent: post.url,
            caller: '',
            method: PUSH_METHOD,
            signal: closing,
            deadlineMs: notification.deadlineMs,
            repeatable: true,
          },
          webhookAttempt(this.attemptContext, post, trace),
        );
        if (result.status >= 200 && result.status < 300) {
          this.delivered(notification, trace.attempts);
        } else {
          // The scheduler stopped on the webhook's own answer: final, or repeated too often.
          const reason =
            trace.lastHint?.kind === 'not-retryable'
              ? PUSH_DROP_REASONS.rejected
              : PUSH_DROP_REASONS.retriesExhausted;
          this.drop(notification, reason, { attempts: trace.attempts, status: result.status });
        }
        return;
      } catch (error) {
        if (error instanceof CircuitPause && !closing.aborted) continue;
        const reason: PushDropReason = closing.aborted
          ? PUSH_DROP_REASONS.closed
          : isWebhookRefusedError(error)
            ? PUSH_DROP_REASONS.refused
            : isRetryBudgetExceededError(error)
              ? PUSH_DROP_REASONS.deadline
              : isRetryError(error) || trace.lastHint?.kind !== 'not-retryable'
                ? PUSH_DROP_REASONS.retriesExhausted
                : PUSH_DROP_REASONS.rejected;
        this.drop(notification, reason, { ...detail(), error });
        return;
      }
    }
  }

  private circuitChanged(event: PushCircuitEvent, openMs: number): void {
    try {
      this.hooks.onCircuitChange?.(event);
    } catch {
      // A metrics hook must not break delivery.
    }
    if (this.logger !== undefined) logCircuitChange(this.logger, event, openMs);
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
