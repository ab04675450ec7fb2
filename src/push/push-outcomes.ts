/**
 * @module push-outcomes
 * `PushOutcomes`: how the push sender's notifications end, counted and reported to its hooks.
 */

import type { PushCircuitEvent } from './circuit-board.js';
import type { QueuedNotification } from './notification-queue.js';
import { PUSH_DROP_REASONS, type PushDropReason } from './push-drops.js';
import {
  logCircuitChange,
  type PushSenderLogger,
  type RateLimitedPushSenderOptions,
} from './push-sender-options.js';
import type { WebhookPostSpec } from './webhook-attempt.js';

/**
 * One notification on its way to a webhook: a rendered POST with its task, kind and deadline.
 */
export type WebhookNotification = QueuedNotification<WebhookPostSpec>;

/**
 * What is known about a failed delivery: POSTs made, the last HTTP status, the last error.
 */
export interface DropDetail {
  readonly attempts: number;
  readonly status?: number | undefined;
  readonly error?: unknown;
}

/** The counters of {@link PushOutcomes}, as `stats()` reports them. */
interface OutcomeCounters {
  accepted: number;
  delivered: number;
  posts: number;
  retries: number;
  errors: number;
  readonly dropped: Record<PushDropReason, number>;
}

/**
 * The outcome ledger of one push sender: counters and the user's hooks. Every hook is called
 * inside a `try`: a metrics hook can never break delivery nor reach the SDK.
 *
 * @example
 * ```ts
 * const outcomes = new PushOutcomes(options, clock, logger);
 * outcomes.drop(notification, PUSH_DROP_REASONS.deadline, { attempts: 2 });
 * ```
 */
export class PushOutcomes {
  readonly counters: OutcomeCounters = {
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
  private readonly hooks: Pick<
    RateLimitedPushSenderOptions,
    'onDrop' | 'onDelivered' | 'onError' | 'onCircuitChange'
  >;

  /**
   * @param options - The sender's options (only the hooks are read).
   * @param clock - For the age of a notification, ms.
   * @param logger - Where circuit changes are logged; undefined: not logged.
   */
  constructor(
    options: RateLimitedPushSenderOptions,
    private readonly clock: { nowMs(): number },
    private readonly logger: PushSenderLogger | undefined,
  ) {
    this.hooks = {
      ...(options.onDrop === undefined ? {} : { onDrop: options.onDrop }),
      ...(options.onDelivered === undefined ? {} : { onDelivered: options.onDelivered }),
      ...(options.onError === undefined ? {} : { onError: options.onError }),
      ...(options.onCircuitChange === undefined
        ? {}
        : { onCircuitChange: options.onCircuitChange }),
    };
  }

  /** A POST left for a webhook (`resend`: the same notification again). */
  posted(resend: boolean): void {
    this.counters.posts++;
    if (resend) this.counters.retries++;
  }

  /** An origin's circuit changed: the hook, and one log line. */
  circuitChanged(event: PushCircuitEvent, openMs: number): void {
    try {
      this.hooks.onCircuitChange?.(event);
    } catch {
      // A metrics hook must not break delivery.
    }
    if (this.logger !== undefined) logCircuitChange(this.logger, event, openMs);
  }

  /** The webhook answered 2xx after `attempts` POSTs. */
  delivered(notification: WebhookNotification, attempts: number): void {
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

  /** The notification will never be delivered, for `reason`. */
  drop(notification: WebhookNotification, reason: PushDropReason, detail: DropDetail): void {
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

  /** A store or serializer failed for a task's event (nothing was queued for it). */
  reportError(error: unknown, taskId: string): void {
    this.counters.errors++;
    try {
      this.hooks.onError?.(error, taskId);
    } catch {
      // Nothing may reach the SDK.
    }
  }
}
