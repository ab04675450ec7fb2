/**
 * The rate-limit extension as a card publishes it, read back with public names only: the raw
 * `params` any client sees (`withRateLimitExtension`, `RATE_LIMIT_EXTENSION_URI`).
 */

import {
  type Limiter,
  RATE_LIMIT_EXTENSION_URI,
  withRateLimitExtension,
} from 'a2a-ratelimit/server';

/** One policy as published (the fields the tests read). */
export type PublishedPolicyJson = Readonly<Record<string, unknown>> & { readonly name: string };

/** The extension's `params` on a card (`undefined` without the extension). */
export function rateLimitParams(
  card: unknown,
): { readonly policies: readonly PublishedPolicyJson[] } | undefined {
  const extensions = (card as { capabilities?: { extensions?: unknown[] } } | null)?.capabilities
    ?.extensions;
  const found = (extensions ?? []).find(
    (e) => (e as { uri?: unknown } | null)?.uri === RATE_LIMIT_EXTENSION_URI,
  ) as { params: { policies: PublishedPolicyJson[] } } | undefined;
  return found?.params;
}

/** The params a limiter publishes on an agent's public card. */
export function publishedParams(limiter: Limiter): {
  readonly policies: readonly PublishedPolicyJson[];
} {
  const params = rateLimitParams(withRateLimitExtension({ capabilities: {} }, limiter));
  if (params === undefined) throw new Error('the card carries no rate-limit extension');
  return params;
}
