/**
 * @module push-drops
 * Why a push notification was dropped, as stable strings, and the records handed to the sender's
 * hooks.
 */

/**
 * Reasons a notification is dropped.
 * - `coalesced`: a later status update of the same task replaced it while it was queued (the
 *   latest state wins; its status message is lost — by design).
 * - `queue-full`: the webhook's queue was at `maxQueuedPerWebhook`; the oldest queued
 *   non-terminal status update (then non-terminal task snapshot) goes first.
 * - `deadline`: not delivered within `deliveryDeadlineMs`, or the webhook asked for a wait that
 *   does not fit in what is left of it.
 * - `rejected`: the webhook answered with a status that is not worth repeating (400, 401, 404…).
 * - `retries-exhausted`: `maxRetries` re-sends were made.
 * - `refused`: the webhook policy refused the URL, or an address its host name resolved to;
 *   nothing was connected to.
 * - `circuit-open`: the webhook origin's circuit is open (it kept failing) and stays open past
 *   the notification's deadline, or the deadline passed while it was open.
 * - `closed`: the sender was closed before delivery.
 *
 * @example
 * ```ts
 * if (drop.reason === PUSH_DROP_REASONS.queueFull) alert('webhook cannot keep up');
 * ```
 */
export const PUSH_DROP_REASONS = {
  coalesced: 'coalesced',
  queueFull: 'queue-full',
  deadline: 'deadline',
  rejected: 'rejected',
  retriesExhausted: 'retries-exhausted',
  refused: 'refused',
  circuitOpen: 'circuit-open',
  closed: 'closed',
} as const;

/**
 * One of {@link PUSH_DROP_REASONS}.
 */
export type PushDropReason = (typeof PUSH_DROP_REASONS)[keyof typeof PUSH_DROP_REASONS];

/**
 * Which `StreamResponse` payload a notification carries.
 */
export type PushPayloadKind = 'task' | 'message' | 'statusUpdate' | 'artifactUpdate';

/**
 * A dropped notification, as reported to `onDrop`. Every notification the sender accepts ends
 * exactly once: delivered, or dropped for one of `PUSH_DROP_REASONS`.
 *
 * @example
 * ```ts
 * const onDrop = (drop: PushDrop) => dropsCounter.inc({ reason: drop.reason, kind: drop.kind });
 * ```
 */
export interface PushDrop {
  readonly reason: PushDropReason;
  /** The webhook URL. */
  readonly url: string;
  readonly taskId: string;
  readonly kind: PushPayloadKind;
  /** The task state it carried (`TaskState` number), for task snapshots and status updates. */
  readonly state?: number | undefined;
  /** POSTs made for it (0 when it never left the queue). */
  readonly attempts: number;
  /** Time from acceptance to the drop, ms. */
  readonly ageMs: number;
  /** HTTP status of the last answer, when there was one. */
  readonly status?: number | undefined;
  /** The last error (network failure, timeout, typed retry error), when there was one. */
  readonly error?: unknown;
}

/**
 * A delivered notification (the webhook answered 2xx), as reported to `onDelivered`.
 *
 * @example
 * ```ts
 * const onDelivered = (d: PushDelivery) => latency.observe(d.ageMs / 1000);
 * ```
 */
export interface PushDelivery {
  /** The webhook URL. */
  readonly url: string;
  readonly taskId: string;
  readonly kind: PushPayloadKind;
  /** The task state it carried (`TaskState` number), for task snapshots and status updates. */
  readonly state?: number | undefined;
  /** POSTs made for it, the successful one included. */
  readonly attempts: number;
  /** Time from acceptance to the 2xx answer, ms. */
  readonly ageMs: number;
}
