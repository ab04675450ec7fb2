/**
 * @module a2a-ratelimit-gateway
 * The gateway engine: a2a-ratelimit's admission, rejections and card extension in front of an A2A
 * agent written in any language (`docs/gateway.md`).
 */

export { createGateway, type Gateway } from './create-gateway.js';
export { callerExtendedCard, type ExtendedCardCaller } from './extended-card.js';
export {
  GATEWAY_DEFAULTS,
  type GatewayIdentity,
  type GatewayOptions,
  type GatewayRefusal,
  type IdentifyRequest,
  type UpstreamAnswer,
} from './gateway-options.js';
export { identifyWith } from './identify-with.js';
export {
  createIdentityResolver,
  IDENTITY_FAILURE_REASONS,
  type IdentityConfig,
  type IdentityFailure,
  type IdentityFailureReason,
  type IdentityResolver,
  type IdentityResolverDeps,
  type IdentityResult,
  parseIdentityConfig,
} from './identity/index.js';
export { AGENT_CARD_PATH } from './upstream-card.js';
export { UPSTREAM_POLICY } from './upstream-failure.js';
export {
  type IgnoredUsageReport,
  parseUsagePath,
  UsageReports,
  type UsageReportsOptions,
} from './usage-reports.js';
export type { ResolveHost } from './webhook-check.js';
