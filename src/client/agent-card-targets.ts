/**
 * @module agent-card-targets
 * Where an agent card says the agent is reachable (1.0 and v0.3 cards), keyed as the client's
 * transports key agents. Pure.
 */

/**
 * The interfaces of a card, and the default agent keys they give.
 */
export interface AgentCardTargets {
  /** URLs of JSON-RPC and HTTP+JSON interfaces. */
  readonly httpUrls: readonly string[];
  /** Targets of gRPC interfaces, as the card writes them. */
  readonly grpcTargets: readonly string[];
  /** The keys the default `agentKey` (an URL's origin) and a gRPC interceptor named after its target use. */
  readonly keys: readonly string[];
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every (url, binding) a card lists; the binding is upper-cased (`JSONRPC`, `HTTP+JSON`, `GRPC`). */
function interfacesOf(card: Readonly<Record<string, unknown>>): [string, string][] {
  const out: [string, string][] = [];
  const add = (url: unknown, binding: unknown): void => {
    if (typeof url === 'string' && url !== '' && typeof binding === 'string') {
      out.push([url, binding.toUpperCase()]);
    }
  };
  for (const list of [card.supportedInterfaces, card.additionalInterfaces]) {
    if (!Array.isArray(list)) continue;
    for (const i of list) if (isRecord(i)) add(i.url, i.protocolBinding ?? i.transport);
  }
  add(card.url, card.preferredTransport ?? 'JSONRPC');
  return out;
}

function originOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The interfaces of an agent card and the agent keys they give; empty lists for anything that is
 * not a card.
 *
 * @example
 * ```ts
 * agentCardTargets({ supportedInterfaces: [{ url: 'http://127.0.0.1:8080/a2a/jsonrpc', protocolBinding: 'JSONRPC' }] }).keys;
 * // ['http://127.0.0.1:8080']
 * ```
 */
export function agentCardTargets(card: unknown): AgentCardTargets {
  const httpUrls: string[] = [];
  const grpcTargets: string[] = [];
  const keys: string[] = [];
  if (!isRecord(card)) return { httpUrls, grpcTargets, keys };
  for (const [url, binding] of interfacesOf(card)) {
    if (binding === 'GRPC') {
      if (!grpcTargets.includes(url)) grpcTargets.push(url);
      if (!keys.includes(url)) keys.push(url);
      continue;
    }
    if (!httpUrls.includes(url)) httpUrls.push(url);
    const origin = originOf(url);
    if (origin !== undefined && !keys.includes(origin)) keys.push(origin);
  }
  return { httpUrls, grpcTargets, keys };
}
