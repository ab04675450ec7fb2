/**
 * @module webhook-check
 * The push SSRF policy at the gateway: the webhook URLs a request registers, checked before it is
 * forwarded.
 */

import { lookup } from 'node:dns/promises';
import type { WebhookPolicy } from 'a2a-ratelimit/push';

/** Resolves a host name to its addresses. */
export type ResolveHost = (hostname: string) => Promise<readonly string[]>;

/** The system resolver (`dns.lookup`, every address). */
export const systemResolveHost: ResolveHost = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The default policy (`createWebhookPolicy()`: public addresses only), loaded on first use:
 * `a2a-ratelimit/push` needs the `@a2a-js/sdk` peer, which a gateway that never sees a webhook
 * does not.
 *
 * @example
 * ```ts
 * const policy = await defaultWebhookPolicy();
 * ```
 */
export async function defaultWebhookPolicy(): Promise<WebhookPolicy> {
  const { createWebhookPolicy } = await import('a2a-ratelimit/push');
  return createWebhookPolicy();
}

/**
 * Why the first refused URL of `urls` is refused, or undefined when all are allowed: each URL is
 * checked with the webhook policy, its host name resolved and every address checked (the agent
 * behind the gateway may not check).
 *
 * @example
 * ```ts
 * await refusedWebhook(['http://127.0.0.1/hook'], createWebhookPolicy(), systemResolveHost);
 * // '127.0.0.1 is a loopback address (127.0.0.0/8), not a public one'
 * ```
 */
export async function refusedWebhook(
  urls: readonly string[],
  policy: WebhookPolicy,
  resolve: ResolveHost,
): Promise<string | undefined> {
  for (const url of urls) {
    const verdict = policy.checkUrl(url);
    if (!verdict.allowed) return verdict.message;
    if (verdict.literal !== undefined || verdict.hostAllowed) continue;
    let addresses: readonly string[];
    try {
      addresses = await resolve(verdict.hostname);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) return `${verdict.hostname} resolved to no address`;
    for (const address of addresses) {
      const checked = policy.checkAddress(verdict.hostname, address);
      if (!checked.allowed) return checked.message;
    }
  }
  return undefined;
}
