/**
 * @module server/express
 * The `a2a-ratelimit/server/express` entry: admission in front of the SDK's `jsonRpcHandler` and
 * `restHandler`, whole or as separate middleware, and the mediation backstops.
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
