/**
 * @module push
 * The `a2a-ratelimit/push` entry, a hand-written list: the rate-limit-aware push sender with its
 * webhook policy and SSRF-safe transport, and the webhook side's rate limit.
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
