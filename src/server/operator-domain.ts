/**
 * @module operator-domain
 * The ErrorInfo `domain` of rejections: the operator's own (given, or the host of the card's first
 * interface URL), never `a2a-protocol.org`.
 */

/**
 * The parts of an A2A agent card this library reads (structural: no SDK import).
 */
export interface AgentCardLike {
  /** A2A 1.0: the interfaces, first one preferred. */
  readonly supportedInterfaces?: readonly { readonly url: string }[];
  /** v0.3 cards: the main URL. */
  readonly url?: string;
}

const A2A_DOMAIN = 'a2a-protocol.org';

function hostOf(url: string): string | undefined {
  const text = url.trim();
  if (text === '') return undefined;
  try {
    // gRPC interfaces are often `host:port` without a scheme.
    const parsed = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `grpc://${text}`);
    return parsed.hostname.replace(/^\[|\]$/g, '') || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Resolves the operator domain: `domain` when given, else the host of the card's first interface
 * URL (or its v0.3 `url`). Throws a `RangeError` when neither yields a domain, or when the result
 * is A2A's reserved `a2a-protocol.org`.
 *
 * @example
 * ```ts
 * resolveOperatorDomain({ card: { supportedInterfaces: [{ url: 'https://agents.example.com:8443/a2a' }] } });
 * // 'agents.example.com'
 * resolveOperatorDomain({ domain: 'ratelimit.example.org' }); // 'ratelimit.example.org'
 * ```
 */
export function resolveOperatorDomain(options: {
  readonly domain?: string | undefined;
  readonly card?: AgentCardLike | undefined;
}): string {
  let domain = options.domain?.trim();
  if (!domain && options.card !== undefined) {
    const first = options.card.supportedInterfaces?.[0]?.url ?? options.card.url;
    domain = first === undefined ? undefined : hostOf(first);
  }
  if (!domain) {
    throw new RangeError(
      'createLimiter: pass `domain` (your own, e.g. "agents.example.com") or an agent `card` whose first interface URL has a host',
    );
  }
  if (domain.toLowerCase() === A2A_DOMAIN) {
    throw new RangeError(
      `createLimiter: domain "${domain}" is reserved for A2A's own errors; use your own domain`,
    );
  }
  return domain;
}
