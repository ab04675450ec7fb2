/**
 * @module webhook-delivery
 * Delivering one push notification: circuit wait, the retry scheduler, and how it ended.
 */

import { isRetryBudgetExceededError, isRetryError } from '../client/retry-errors.js';
import type { RetryScheduler } from '../client/retry-scheduler.js';
import type { Clock } from '../core/clock.js';
import type { CircuitBoard } from './circuit-board.js';
import { PUSH_DROP_REASONS, type PushDropReason } from './push-drops.js';
import type { PushOutcomes, WebhookNotification } from './push-outcomes.js';
import {
  type AttemptContext,
  type AttemptTrace,
  CircuitPause,
  webhookAttempt,
} from './webhook-attempt.js';
import { isWebhookRefusedError } from './webhook-transport.js';

/** The group name of webhook POSTs in the scheduler's gates (until a policy names itself). */
const PUSH_METHOD = 'PushNotification';

/**
 * What a delivery runs on: the sender's scheduler, circuits, attempt context and outcome ledger.
 */
export interface WebhookDeliveryDeps {
  readonly scheduler: RetryScheduler;
  readonly board: CircuitBoard;
  readonly clock: Clock;
  readonly attemptContext: AttemptContext;
  /** Aborted when the sender closes: waits and POSTs stop, the notification is dropped `closed`. */
  readonly closing: AbortSignal;
  readonly outcomes: PushOutcomes;
}

/**
 * Delivers one notification and reports its outcome to `deps.outcomes`: waits while its origin's
 * circuit is open, runs the POST through the shared scheduler (the webhook's gate, its 429/503
 * delays, backoff, the notification's deadline), starts over after a pause the circuit imposed
 * mid-way, and ends delivered or dropped with the reason that stopped it. Never rejects.
 *
 * @example
 * ```ts
 * void deliverNotification(deps, notification).finally(() => queue.finish(notification.lane));
 * ```
 */
export async function deliverNotification(
  deps: WebhookDeliveryDeps,
  notification: WebhookNotification,
): Promise<void> {
  const { board, clock, closing, outcomes } = deps;
  const post = notification.payload;
  const trace: AttemptTrace = { attempts: 0 };
  const detail = () => ({
    attempts: trace.attempts,
    status: trace.lastStatus,
    error: trace.lastError,
  });
  for (;;) {
    if (clock.nowMs() >= notification.deadlineMs) {
      const open = board.stateOf(post.origin) !== 'closed';
      outcomes.drop(
        notification,
        open ? PUSH_DROP_REASONS.circuitOpen : PUSH_DROP_REASONS.deadline,
        detail(),
      );
      return;
    }
    let mayTry: boolean;
    try {
      mayTry = await board.waitFor(post.origin, notification.deadlineMs, closing);
    } catch {
      outcomes.drop(notification, PUSH_DROP_REASONS.closed, detail());
      return;
    }
    if (!mayTry) {
      outcomes.drop(notification, PUSH_DROP_REASONS.circuitOpen, detail());
      return;
    }
    try {
      const result = await deps.scheduler.run(
        {
          agent: post.url,
          caller: '',
          method: PUSH_METHOD,
          signal: closing,
          deadlineMs: notification.deadlineMs,
          repeatable: true,
        },
        webhookAttempt(deps.attemptContext, post, trace),
      );
      if (result.status >= 200 && result.status < 300) {
        outcomes.delivered(notification, trace.attempts);
      } else {
        // The scheduler stopped on the webhook's own answer: final, or repeated too often.
        const reason =
          trace.lastHint?.kind === 'not-retryable'
            ? PUSH_DROP_REASONS.rejected
            : PUSH_DROP_REASONS.retriesExhausted;
        outcomes.drop(notification, reason, { attempts: trace.attempts, status: result.status });
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
      outcomes.drop(notification, reason, { ...detail(), error });
      return;
    }
  }
}
