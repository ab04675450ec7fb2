/**
 * @module push
 * The `a2a-ratelimit/push` entry. The agent side: `RateLimitedPushSender`, a push-notification
 * sender for `@a2a-js/sdk` agents that honours webhooks' 429/503 and `Retry-After` / RetryInfo /
 * `RateLimit` through the client's retry scheduler and gates, keeps per-task order, coalesces
 * queued status updates and bounds its queues (docs/architecture.md, "Push notifications"); the webhook policy and SSRF-safe
 * transport it sends through, the circuit per webhook origin, and
 * `validatingPushNotificationStore`, which refuses a forbidden webhook when it is registered.
 * The webhook side: `pushWebhookRateLimit`, Express middleware that rate-limits incoming
 * notifications per sending agent. Loads `@a2a-js/sdk` (optional peer).
 */

export {
  type Cidr,
  cidrContains,
  embeddedIpv4,
  formatCidr,
  formatIpAddress,
  type IpAddress,
  parseCidr,
  parseIpAddress,
} from '../wire/ip-address.js';
export * from './circuit-board.js';
export * from './notification-queue.js';
export * from './push-configs.js';
export * from './push-drops.js';
export * from './push-sender-options.js';
export * from './rate-limited-push-sender.js';
export * from './special-purpose-ranges.js';
export * from './validating-push-store.js';
export * from './webhook-attempt.js';
export * from './webhook-circuit.js';
export * from './webhook-policy.js';
export * from './webhook-rate-limit.js';
export * from './webhook-transport.js';
