/** The engine's `identify` hook from an identity resolver (`identity:` of the config). */

import type { IncomingMessage } from 'node:http';
import type { GatewayIdentity, IdentifyRequest } from './gateway-options.js';
import type { IdentityResolver } from './identity/identity-resolver.js';

/**
 * Identifies each request with the resolver `current()` returns at that moment, so a reloaded
 * config can swap resolvers under a running gateway. A refused credential (unknown key, bad or
 * expired token, a mandatory credential missing) becomes `{ unauthenticated }`: the engine answers
 * 401 in the binding's format, never an anonymous admission.
 *
 * @example
 * ```ts
 * const resolver = await createIdentityResolver(parseIdentityConfig(config.identity));
 * const gateway = createGateway({ upstream, limiter, identify: identifyWith(() => resolver) });
 * ```
 */
export function identifyWith(current: () => IdentityResolver): IdentifyRequest {
  return async (req: IncomingMessage): Promise<GatewayIdentity> => {
    const found = await current().resolve({
      headers: req.headers,
      remoteAddress: req.socket.remoteAddress,
    });
    if (!found.ok) return { unauthenticated: found };
    return {
      caller: found.caller,
      ...(found.tier === undefined ? {} : { tier: found.tier }),
      ...(found.unbelievedHeaders === undefined
        ? {}
        : { unbelievedHeaders: found.unbelievedHeaders }),
    };
  };
}
