/**
 * @module server/express/rate-limited-handlers
 * The SDK's `jsonRpcHandler` / `restHandler` with admission in front, as one middleware each, over
 * the guarded request handler.
 */

import type { A2ARequestHandler, ServerCallContextBuilder } from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler, type UserBuilder } from '@a2a-js/sdk/server/express';
import type { RequestHandler } from 'express';
import type { Limiter } from '../limiter-api.js';
import { guardContextBuilder, guardRequestHandler } from '../mediation.js';
import { shareUserBuilder } from './express-identity.js';
import type { ExpressAdmissionOptions } from './express-options.js';
import { jsonRpcAdmission } from './json-rpc-admission.js';
import { restAdmission } from './rest-admission.js';

/**
 * Options of {@link rateLimitedJsonRpcHandler} and {@link rateLimitedRestHandler}: the SDK
 * router's own options, and the admission middleware's (`admission`).
 */
export interface RateLimitedHandlerOptions {
  /** The SDK request handler (answers the admitted requests, and duplicates with their task). */
  readonly requestHandler: A2ARequestHandler;
  /** The agent's `UserBuilder`; it runs once per request for both the limiter and the SDK. */
  readonly userBuilder: UserBuilder;
  /** The SDK's v0.3 compatibility mode; v0.3 requests are decided only when it is on. */
  readonly legacyCompat?: { readonly enabled: boolean };
  /** The SDK's call-context builder. */
  readonly contextBuilder?: ServerCallContextBuilder;
  /**
   * The remaining admission options (identity, skill, `mirrorHttpStatus`, `bodyLimit`, …).
   * `legacy` defaults to `legacyCompat.enabled` here (v0.3 names are decided only when the SDK
   * serves them).
   */
  readonly admission?: Omit<
    ExpressAdmissionOptions,
    'userBuilder' | 'requestHandler' | 'sdkHandler' | 'contextBuilder'
  >;
}

/** The SDK router options and admission options both wrappers derive from `options`. */
function rateLimitedParts(options: RateLimitedHandlerOptions): {
  sdk: Parameters<typeof jsonRpcHandler>[0];
  admission: ExpressAdmissionOptions;
} {
  const userBuilder = shareUserBuilder(options.userBuilder);
  const { requestHandler, legacyCompat, contextBuilder } = options;
  return {
    // The SDK runs an operation only for a request admitted for it (see ./mediation.ts).
    sdk: {
      requestHandler: guardRequestHandler(requestHandler),
      userBuilder,
      contextBuilder: guardContextBuilder(contextBuilder),
      ...(legacyCompat === undefined ? {} : { legacyCompat: { ...legacyCompat } }),
    },
    admission: {
      legacy: legacyCompat?.enabled === true,
      ...options.admission,
      requestHandler,
      userBuilder,
      ...(contextBuilder === undefined ? {} : { contextBuilder }),
    },
  };
}

/**
 * The SDK's `jsonRpcHandler` with admission in front, as one middleware: mount it where you would
 * mount the SDK's router. The same as {@link jsonRpcAdmission} followed by `jsonRpcHandler`, with
 * the `UserBuilder` shared ({@link shareUserBuilder}) and one Express layer fewer per request.
 *
 * @example
 * ```ts
 * app.use('/a2a/jsonrpc', rateLimitedJsonRpcHandler(limiter, { requestHandler, userBuilder: UserBuilder.noAuthentication }));
 * ```
 */
export function rateLimitedJsonRpcHandler(
  limiter: Limiter,
  options: RateLimitedHandlerOptions,
): RequestHandler {
  const parts = rateLimitedParts(options);
  return jsonRpcAdmission(limiter, { ...parts.admission, sdkHandler: jsonRpcHandler(parts.sdk) });
}

/**
 * The SDK's `restHandler` with admission in front, as one middleware: mount it where you would
 * mount the SDK's router. The same as {@link restAdmission} followed by `restHandler`, with the
 * `UserBuilder` shared ({@link shareUserBuilder}) and one Express layer fewer per request.
 *
 * @example
 * ```ts
 * app.use('/a2a/rest', rateLimitedRestHandler(limiter, { requestHandler, userBuilder: UserBuilder.noAuthentication }));
 * ```
 */
export function rateLimitedRestHandler(
  limiter: Limiter,
  options: RateLimitedHandlerOptions,
): RequestHandler {
  const parts = rateLimitedParts(options);
  return restAdmission(limiter, { ...parts.admission, sdkHandler: restHandler(parts.sdk) });
}
