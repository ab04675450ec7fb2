/**
 * @module server/express
 * The `a2a-ratelimit/server/express` entry: Express admission in front of the SDK's
 * `jsonRpcHandler` and `restHandler`, as one middleware that builds the SDK's router and hands it
 * what it admits (`rateLimitedJsonRpcHandler`, `rateLimitedRestHandler`), or as a middleware
 * mounted before the SDK's router on the same path (`jsonRpcAdmission`, `restAdmission`, with
 * `shareUserBuilder` and the backstops `guardRequestHandler` / `guardContextBuilder`). Each
 * parses the body once (a plain one only once admitted, decided on a scan of it; none nested
 * deeper than `maxJsonDepth`), answers a malformed body exactly as the SDK would, identifies the caller
 * with the agent's own `UserBuilder`, and runs the admission pipeline shared with gRPC
 * (server/admission-pipeline.ts): the rejection is written before any task exists, or the
 * `RateLimit` headers are set and the request passed on. The only folder importing express and
 * the SDK's Express bits. See docs/architecture.md, "Mediation".
 */

export { guardContextBuilder, guardRequestHandler } from '../mediation.js';
export { shareUserBuilder } from './express-identity.js';
export type { ExpressAdmissionOptions } from './express-options.js';
export { jsonRpcAdmission } from './json-rpc-admission.js';
export {
  type RateLimitedHandlerOptions,
  rateLimitedJsonRpcHandler,
  rateLimitedRestHandler,
} from './rate-limited-handlers.js';
export { restAdmission } from './rest-admission.js';
