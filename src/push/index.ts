/**
 * @module push
 * The `a2a-ratelimit/push` entry: `RateLimitedPushSender`, a push-notification sender for
 * `@a2a-js/sdk` agents that honours webhooks' 429/503 and `Retry-After` / RetryInfo /
 * `RateLimit` through the client's retry scheduler and gates, keeps per-task order, coalesces
 * queued status updates and bounds its queues (DESIGN §6). Loads `@a2a-js/sdk` (optional peer).
 */
export * from './ip-address.js';
export * from './notification-queue.js';
export * from './push-drops.js';
export * from './rate-limited-push-sender.js';
export * from './webhook-policy.js';
export * from './webhook-transport.js';
