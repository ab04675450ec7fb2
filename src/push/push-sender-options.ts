/**
 * @module push-sender-options
 * The options, counters and logger of `RateLimitedPushSender`.
 */

import type { PushNotificationSerializer } from '@a2a-js/sdk/server';
import type { RetryRules } from '../client/plan-retry.js';
import type { Sleep } from '../client/sleep.js';
import type { Clock } from '../core/clock.js';
import type { PushCircuitEvent } from './circuit-board.js';
import type { PushDelivery, PushDrop, PushDropReason } from './push-drops.js';
import type { CircuitOptions } from './webhook-circuit.js';
import type { WebhookPolicy, WebhookPolicyOptions } from './webhook-policy.js';
import type { WebhookTransport } from './webhook-transport.js';

/**
 * Retry tunables of the sender (see `RetryRules`). All durations in milliseconds.
 */
export type PushRetryRules = Partial<
  Pick<RetryRules, 'maxRetries' | 'maxSingleWaitMs' | 'jitterMs' | 'backoffBaseMs' | 'backoffCapMs'>
>;

/**
 * Where the sender's notices go (one line per circuit change). `fields` carry the details.
 */
export interface PushSenderLogger {
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

/**
 * Options of `RateLimitedPushSender`. All durations in milliseconds.
 *
 * @example
 * ```ts
 * const options: RateLimitedPushSenderOptions = {
 *   policy: { allow: ['hooks.corp.example', '10.8.0.0/16'] },
 *   circuit: { failureThreshold: 20, openMs: 30_000 },
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
   * Where webhooks may be (a compiled `createWebhookPolicy` or its options): checked when a
   * notification is accepted and, by the default transport, on every address a host name
   * resolves to. @defaultValue only public addresses, http(s) only
   */
  readonly policy?: WebhookPolicy | WebhookPolicyOptions;
  /**
   * How POSTs are sent. @defaultValue `createWebhookTransport({ policy })`, closed by `close()`.
   * A transport of your own must do its own address checks (the URL check still runs first).
   */
  readonly transport?: WebhookTransport;
  /**
   * The circuit per webhook origin: after `failureThreshold` consecutive failed POSTs (no answer,
   * or a 5xx without a delay) nothing is sent to that origin for `openMs`, then one probe.
   * @defaultValue `{ failureThreshold: 20, openMs: 30_000 }`
   */
  readonly circuit?: CircuitOptions;
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
  /** Time source. @defaultValue systemClock */
  readonly clock?: Clock;
  /** Waits between attempts, in the gate and while a circuit is open. @defaultValue systemSleep */
  readonly sleep?: Sleep;
  /** Uniform in [0, 1), for jitter and backoff. @defaultValue Math.random */
  readonly random?: () => number;
  /**
   * The signal that times out one POST after `ms`. @defaultValue AbortSignal.timeout (real time:
   * it guards real I/O even when `clock`/`sleep` are virtual)
   */
  readonly timeoutSignal?: (ms: number) => AbortSignal;
  /** Circuit notices (open: `warn`; half-open, closed: `info`). `false` silences them. @defaultValue console */
  readonly logger?: PushSenderLogger | false;
  /** Called once per dropped notification (metrics hook; exceptions are swallowed). */
  readonly onDrop?: (drop: PushDrop) => void;
  /** Called once per delivered notification (metrics hook; exceptions are swallowed). */
  readonly onDelivered?: (delivery: PushDelivery) => void;
  /** Called on every circuit state change (metrics hook; exceptions are swallowed). */
  readonly onCircuitChange?: (event: PushCircuitEvent) => void;
  /** Called when a task's push configs could not be loaded or a payload not serialized. */
  readonly onError?: (error: unknown, taskId: string) => void;
}

/**
 * Counters of a sender. Every accepted notification ends in `delivered` or one `dropped` reason
 * (or is still `queued` / `inFlight`).
 *
 * @example
 * ```ts
 * const { delivered, dropped, posts, circuitsOpen } = sender.stats();
 * ```
 */
export interface PushSenderStats {
  /** Notifications accepted (one per event and push config). */
  readonly accepted: number;
  readonly delivered: number;
  /** Dropped notifications by reason. */
  readonly dropped: Readonly<Record<PushDropReason, number>>;
  /** HTTP POSTs sent, re-sends included (refused ones never count: nothing was sent). */
  readonly posts: number;
  /** Re-sends. */
  readonly retries: number;
  /** Notifications waiting in queues now. */
  readonly queued: number;
  /** Notifications being delivered now (sending, or waiting to be re-sent). */
  readonly inFlight: number;
  /** Webhook URLs with work now. */
  readonly webhooks: number;
  /** Circuits open or half-open now. */
  readonly circuitsOpen: number;
  /** Times a circuit opened (re-openings after a failed probe included). */
  readonly circuitOpenings: number;
  /** Push-config loads or serializations that failed. */
  readonly errors: number;
}

/**
 * The default logger: one console line per notice, prefixed `[a2a-ratelimit]`.
 *
 * @example
 * ```ts
 * new RateLimitedPushSender(store, { logger: consolePushLogger });
 * ```
 */
export const consolePushLogger: PushSenderLogger = {
  warn: (message, fields) => console.warn(`[a2a-ratelimit] ${message}`, fields ?? ''),
  info: (message, fields) => console.info(`[a2a-ratelimit] ${message}`, fields ?? ''),
};

/**
 * Writes the notice of one circuit change: `warn` when it opens, `info` when it lets a probe
 * through or closes. A logger that throws is ignored.
 *
 * @example
 * ```ts
 * logCircuitChange(consolePushLogger, event, 30_000);
 * // [a2a-ratelimit] push webhook https://hooks.example.com: circuit open after 20 consecutive failed POSTs; nothing sent to it for 30000 ms
 * ```
 */
export function logCircuitChange(
  logger: PushSenderLogger,
  event: PushCircuitEvent,
  openMs: number,
): void {
  const { origin } = event;
  try {
    if (event.to === 'open') {
      logger.warn(
        `push webhook ${origin}: circuit open after ${event.failures} consecutive failed POSTs; nothing sent to it for ${openMs} ms`,
        { origin, failures: event.failures, lastFailure: event.lastFailure, openMs },
      );
    } else if (event.to === 'half-open') {
      logger.info(`push webhook ${origin}: circuit half-open, sending one probe`, { origin });
    } else {
      logger.info(`push webhook ${origin}: circuit closed, delivering again`, { origin });
    }
  } catch {
    // A logger must not break delivery.
  }
}
