/**
 * @module gateway-identity
 * `gateway`'s `identity:` config as the engine's `identify` hook, swapped in place on reload.
 */

import { dirname, resolve as resolvePath } from 'node:path';
import type { IdentifyRequest, IdentityResolver } from 'a2a-ratelimit-gateway';
import { CliError } from './cli-error.js';
import type { GatewayConfig } from './gateway-config.js';

/** The gateway's `identify` hook and the resolver behind it, swapped by a reload. */
export interface GatewayIdentityHolder {
  readonly identify: IdentifyRequest;
  /**
   * Builds the resolver of another `identity:` and puts it in force; throws a `CliError` naming
   * the field or file (the running resolver stays) when it cannot.
   */
  swap(identity: GatewayConfig['identity'], source: string): Promise<void>;
  close(): void;
}

async function resolverOf(
  identity: GatewayConfig['identity'],
  source: string,
): Promise<IdentityResolver> {
  const { createIdentityResolver, parseIdentityConfig } = await import('a2a-ratelimit-gateway');
  try {
    return await createIdentityResolver(parseIdentityConfig(identity), {
      baseDir: source === '' ? process.cwd() : dirname(resolvePath(source)),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new CliError(source === '' ? message : `${source}: ${message}`);
  }
}

/**
 * How `identity:` of the config becomes the gateway's `identify` hook: API keys (in clear or as
 * SHA-256, inline or in `apiKeysFile`), JWTs, a trusted proxy's header, else the client address
 * (IPv6 by /64). A refused credential is a 401, never an anonymous admission. Without
 * `identity:`, callers are keyed by client address. `source` is the config file (relative
 * `apiKeysFile` / `jwksFile` paths are read beside it), `''` for none.
 *
 * @example
 * ```ts
 * const holder = await identityFromConfig(config.identity, 'gateway.yaml');
 * ```
 */
export async function identityFromConfig(
  identity: GatewayConfig['identity'],
  source: string,
): Promise<GatewayIdentityHolder> {
  const { identifyWith } = await import('a2a-ratelimit-gateway');
  let current = await resolverOf(identity, source);
  return {
    identify: identifyWith(() => current),
    async swap(next, nextSource) {
      const replacement = await resolverOf(next, nextSource);
      const old = current;
      current = replacement;
      old.close();
    },
    close: () => current.close(),
  };
}
