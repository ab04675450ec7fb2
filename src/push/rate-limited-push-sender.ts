/**
 * @module rate-limited-push-sender
 * `RateLimitedPushSender`: the SDK's push sender with the client's rules against the webhook;
 * accepts events, renders them and queues them per webhook.
 */

import type {
  PushNotificationSender,
  PushNotificationStore,
  ServerCallContext,
  StoredPushNotificationConfig,
} from '@a2a-js/sdk/server';
import { DEFAULT_RETRY_RULES } from '../client/plan-retry.js';
import { RetryScheduler } from '../client/retry-scheduler.js';
import { systemSleep } from '../client/sleep.js';
import type { Clock } from '../core/clock.js';
import { TERMINAL_TASK_STATES } from '../core/task-events.js';
import { systemClock } from '../platform/system-clock.js';
import { CircuitBoard } from './circuit-board.js';
import { NotificationQueue } from './notification-queue.js';
import { PushConfigReader } from './push-configs.js';
import { PUSH_DROP_REASONS, type PushPayloadKind } from './push-drops.js';
import { PushOutcomes, type WebhookNotification } from './push-outcomes.js';
import {
  consolePushLogger,
  type PushSenderStats,
  type RateLimitedPushSenderOptions,
} from './push-sender-options.js';
import type { WebhookPostSpec } from './webhook-attempt.js';
import { deliverNotification, type WebhookDeliveryDeps } from './webhook-delivery.js';
import type { WebhookPolicy } from './webhook-policy.js';
import {
  createWebhookTransport,
  toWebhookPolicy,
  WebhookRefusedError,
  type WebhookTransport,
} from './webhook-transport.js';

type StreamResponse = Parameters<PushNotificationSender['send']>[0];
type Task = NonNullable<Parameters<PushNotificationSender['send']>[2]>;

type Notification = WebhookNotification;

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
  private readonly clock: Clock;
  private readonly policy: WebhookPolicy;
  private readonly transport: WebhookTransport;
  private readonly ownsTransport: boolean;
  private readonly board: CircuitBoard;
  private readonly delivery: WebhookDeliveryDeps;
  private readonly outcomes: PushOutcomes;
  private readonly deliveryDeadlineMs: number;
  private readonly maxQueued: number;
  private readonly maxConcurrent: number;
  private readonly configs: PushConfigReader;
  private readonly webhooks = new Map<string, NotificationQueue<WebhookPostSpec>>();
  /** Per task: the chain of config loads, so that notifications are queued in `send` order. */
  private readonly loads = new Map<string, Promise<void>>();
  private readonly closing = new AbortController();
  private readonly idleWaiters: (() => void)[] = [];
  private pendingLoads = 0;

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
    const logger = options.logger === false ? undefined : (options.logger ?? consolePushLogger);
    const outcomes = new PushOutcomes(options, this.clock, logger);
    this.outcomes = outcomes;
    const circuitOptions = options.circuit ?? {};
    this.board = new CircuitBoard({
      circuit: circuitOptions,
      clock: this.clock,
      sleep,
      onChange: (event) => outcomes.circuitChanged(event, circuitOptions.openMs ?? 30_000),
    });
    const attemptContext = {
      transport: this.transport,
      board: this.board,
      clock: this.clock,
      timeoutSignal: options.timeoutSignal ?? ((ms: number) => AbortSignal.timeout(ms)),
      postTimeoutMs: positive(options.postTimeoutMs, 10_000),
      closing: this.closing.signal,
      onPost: (resend: boolean) => outcomes.posted(resend),
    };
    const retry = options.retry ?? {};
    const scheduler = new RetryScheduler({
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
    this.delivery = {
      scheduler,
      board: this.board,
      clock: this.clock,
      attemptContext,
      closing: this.closing.signal,
      outcomes,
    };
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
      this.outcomes.reportError(error, taskId);
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
    const counters = this.outcomes.counters;
    return {
      accepted: counters.accepted,
      delivered: counters.delivered,
      dropped: { ...counters.dropped },
      posts: counters.posts,
      retries: counters.retries,
      queued,
      inFlight,
      webhooks: this.webhooks.size,
      circuitsOpen: circuits.open,
      circuitOpenings: circuits.openings,
      errors: counters.errors,
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
          this.outcomes.drop(notification, reason, { attempts: 0 });
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
      this.outcomes.reportError(error, taskId);
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
        this.outcomes.reportError(error, taskId);
        continue;
      }
      this.outcomes.counters.accepted++;
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
        this.outcomes.drop(notification, PUSH_DROP_REASONS.refused, { attempts: 0, error });
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
      this.outcomes.drop(dropped, reason, { attempts: 0 });
    }
    this.pump(url, queue);
  }

  /** Starts deliveries while the webhook has room for more in flight. */
  private pump(url: string, queue: NotificationQueue<WebhookPostSpec>): void {
    while (queue.inDelivery < this.maxConcurrent && !this.closing.signal.aborted) {
      const notification = queue.take();
      if (notification === undefined) break;
      void deliverNotification(this.delivery, notification).finally(() => {
        queue.finish(notification.lane);
        if (queue.isIdle() && this.webhooks.get(url) === queue) this.webhooks.delete(url);
        else this.pump(url, queue);
        this.notifyIfIdle();
      });
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
