/**
 * @module push
 * The `a2a-ratelimit/push` entry, a hand-written list. The agent side: `RateLimitedPushSender`, a
 * push-notification sender for `@a2a-js/sdk` agents that honours webhooks' 429/503 and
 * `Retry-After` / RetryInfo / `RateLimit` through the client's retry scheduler and gates, keeps
 * per-task order, coalesces queued status updates and bounds its queues (docs/architecture.md,
 * "Push notifications"); the webhook policy (`createWebhookPolicy`) and SSRF-safe transport
 * (`createWebhookTransport`) it sends through; and `validatingPushNotificationStore`, which
 * refuses a forbidden webhook when it is registered. The webhook side: `pushWebhookRateLimit`,
 * Express middleware that rate-limits incoming notifications per sending agent, and its policy
 * (`pushWebhookPolicy`). The queue, the circuits and the address parser stay internal. Loads
 * `@a2a-js/sdk` (optional peer).
 */

export type { RateLimitedPushSenderOptions } from './push-sender-options.js';
export { RateLimitedPushSender } from './rate-limited-push-sender.js';
export {
  type ValidatingPushStoreOptions,
  validatingPushNotificationStore,
} from './validating-push-store.js';
export {
  createWebhookPolicy,
  type WebhookPolicy,
  type WebhookPolicyOptions,
} from './webhook-policy.js';
export {
  type PushWebhookRateLimitOptions,
  pushWebhookPolicy,
  pushWebhookRateLimit,
} from './webhook-rate-limit.js';
export {
  createWebhookTransport,
  type WebhookTransport,
  type WebhookTransportOptions,
} from './webhook-transport.js';
