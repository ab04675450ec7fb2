/**
 * @module upstream-card
 * The upstream's card as the gateway serves it: fetched and refetched, interfaces rewritten onto
 * the gateway, the paths proxied.
 */

import type { Limiter } from 'a2a-ratelimit/server';
import { followPolicyChanges, withRateLimitExtension } from 'a2a-ratelimit/server';
import type { Dispatcher } from 'undici';

/** Where the card is served, on the upstream and on the gateway. */
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';

/** The card bindings the gateway proxies, by the card's `protocolBinding` / v0.3 `transport` name. */
export const PROXIED_BINDINGS = { JSONRPC: 'jsonrpc', 'HTTP+JSON': 'rest' } as const;

/** A proxied interface: its binding and its path on the upstream (no trailing slash). */
export interface ProxiedInterface {
  readonly binding: 'jsonrpc' | 'rest';
  /** The path as the card spells it (forwarded in this spelling). */
  readonly path: string;
  /** The path lower-cased, for matching. */
  readonly lowerPath: string;
}

type JsonCard = Record<string, unknown> & {
  capabilities?: { extensions?: unknown[] } | undefined;
};

/** The path of an interface URL (no trailing slash), or undefined when it is no URL. */
function pathOf(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    const path = new URL(url).pathname;
    return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  } catch {
    return undefined;
  }
}

/**
 * A copy of a card (1.0 `supportedInterfaces`, and v0.3 `url` / `preferredTransport` /
 * `additionalInterfaces`) with every proxied interface's URL rewritten onto `publicBase`, and the
 * interfaces it proxies.
 *
 * @example
 * ```ts
 * rewriteCard(card, 'https://gw.example').interfaces; // [{ binding: 'jsonrpc', path: '/a2a/jsonrpc', … }]
 * ```
 */
export function rewriteCard(
  card: JsonCard,
  publicBase: string,
  grpcPublic?: string,
): {
  readonly card: JsonCard;
  readonly interfaces: readonly ProxiedInterface[];
  /** The upstream's gRPC interface URL as the card wrote it, if it lists one. */
  readonly grpcUrl?: string | undefined;
} {
  const base = publicBase.endsWith('/') ? publicBase.slice(0, -1) : publicBase;
  const interfaces: ProxiedInterface[] = [];
  let grpcUrl: string | undefined;
  const rewrite = (url: unknown, bindingName: unknown): unknown => {
    // The gRPC interface: relayed when the gateway listens for gRPC (`grpcPublic`).
    if (bindingName === 'GRPC' && typeof url === 'string') {
      grpcUrl ??= url;
      return grpcPublic ?? url;
    }
    const binding =
      typeof bindingName === 'string' && Object.hasOwn(PROXIED_BINDINGS, bindingName)
        ? PROXIED_BINDINGS[bindingName as keyof typeof PROXIED_BINDINGS]
        : undefined;
    const path = pathOf(url);
    if (binding === undefined || path === undefined) return url;
    const lowerPath = path.toLowerCase();
    if (!interfaces.some((i) => i.binding === binding && i.lowerPath === lowerPath)) {
      interfaces.push({ binding, path, lowerPath });
    }
    return `${base}${path === '/' ? '' : path}`;
  };
  const copy: JsonCard = { ...card };
  if (Array.isArray(card.supportedInterfaces)) {
    copy.supportedInterfaces = card.supportedInterfaces.map((i: Record<string, unknown>) => ({
      ...i,
      url: rewrite(i?.url, i?.protocolBinding),
    }));
  }
  if (typeof card.url === 'string') {
    copy.url = rewrite(card.url, card.preferredTransport ?? 'JSONRPC');
  }
  if (Array.isArray(card.additionalInterfaces)) {
    copy.additionalInterfaces = card.additionalInterfaces.map((i: Record<string, unknown>) => ({
      ...i,
      url: rewrite(i?.url, i?.transport),
    }));
  }
  return { card: copy, interfaces, grpcUrl };
}

/** Options of {@link UpstreamCard}. */
export interface UpstreamCardOptions {
  /** The upstream's base URL (its card is at `AGENT_CARD_PATH` below it). */
  readonly upstream: URL;
  readonly dispatcher: Dispatcher;
  readonly limiter: Limiter;
  /** The gateway's public base URL (the card's interfaces are rewritten onto it). */
  readonly publicBase: () => string;
  /** Refetch period, ms. */
  readonly refreshMs: number;
  /** Retry period while the card cannot be fetched, ms. */
  readonly retryMs: number;
  /** Largest card accepted, bytes. */
  readonly maxBytes: number;
  /** One line about a failed fetch. */
  readonly log: (line: string) => void;
  /** The gateway's public gRPC target (`host:port`), when it relays gRPC. */
  readonly grpcPublic?: () => string | undefined;
}

/**
 * The upstream card, refetched every `refreshMs`; undefined until the first fetch succeeded (the
 * gateway is not ready before). A failed refetch keeps the last good card. Every JSON-RPC and
 * HTTP+JSON interface URL is rewritten onto the gateway's public address (the gRPC one onto its
 * public gRPC target when it relays gRPC), and the rate-limit extension is added and kept current
 * as an in-process agent does (`withRateLimitExtension`, `followPolicyChanges`). The paths of
 * those interfaces are the only paths the gateway proxies.
 *
 * @example
 * ```ts
 * const card = new UpstreamCard(options);
 * await card.refresh();
 * card.text; // the served JSON
 * ```
 */
export class UpstreamCard {
  private served: JsonCard | undefined;
  private json: string | undefined;
  private unfollow: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The interfaces proxied (empty before the first fetch). */
  interfaces: readonly ProxiedInterface[] = [];
  /** The last fetch error, when the last fetch failed. */
  lastError: string | undefined;
  /** The upstream's gRPC interface URL as its card wrote it, if it lists one. */
  grpcUrl: string | undefined;

  constructor(private readonly options: UpstreamCardOptions) {}

  /** Whether a card has been fetched. */
  get ready(): boolean {
    return this.served !== undefined;
  }

  /** The served card's JSON text (undefined before the first fetch). */
  get text(): string | undefined {
    if (this.json === undefined && this.served !== undefined) {
      this.json = JSON.stringify(this.served);
    }
    return this.json;
  }

  /** Fetches the card once and schedules the next fetch. Never throws. */
  async refresh(): Promise<void> {
    clearTimeout(this.timer);
    let ok = false;
    try {
      this.install(await this.fetchCard());
      this.lastError = undefined;
      ok = true;
    } catch (error) {
      const message = (error as Error).message;
      if (message !== this.lastError) {
        this.options.log(`a2a-ratelimit gateway: cannot fetch the upstream's card: ${message}`);
      }
      this.lastError = message;
    }
    if (this.closed) return;
    this.timer = setTimeout(
      () => void this.refresh(),
      ok || this.served !== undefined ? this.options.refreshMs : this.options.retryMs,
    );
    this.timer.unref();
  }

  /** Stops refetching and following policy changes. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.unfollow?.();
  }

  private async fetchCard(): Promise<JsonCard> {
    const url = new URL(AGENT_CARD_PATH.slice(1), withSlash(this.options.upstream));
    const response = await this.options.dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: 'GET',
      headers: { accept: 'application/json' },
    });
    let bytes = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of response.body) {
      bytes += (chunk as Buffer).length;
      if (bytes > this.options.maxBytes) {
        response.body.destroy();
        throw new Error(`the card at ${url.href} is larger than ${this.options.maxBytes} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    if (response.statusCode !== 200) {
      throw new Error(`${url.href} answered HTTP ${response.statusCode}`);
    }
    const card = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    if (card === null || typeof card !== 'object' || Array.isArray(card)) {
      throw new Error(`${url.href} is not a JSON object`);
    }
    return card as JsonCard;
  }

  private install(card: JsonCard): void {
    const {
      card: rewritten,
      interfaces,
      grpcUrl,
    } = rewriteCard(card, this.options.publicBase(), this.options.grpcPublic?.());
    this.grpcUrl = grpcUrl;
    const served = withRateLimitExtension(rewritten, this.options.limiter) as JsonCard;
    this.unfollow?.();
    const limiter = this.options.limiter;
    const unfollow = followPolicyChanges(served, limiter);
    // The extension is replaced in place; the cached text goes with it.
    const drop = limiter.onPoliciesChanged(() => {
      this.json = undefined;
    });
    this.unfollow = () => {
      unfollow();
      drop();
    };
    this.served = served;
    this.json = undefined;
    this.interfaces = interfaces;
  }
}

function withSlash(url: URL): URL {
  return url.pathname.endsWith('/') ? url : new URL(`${url.href}/`);
}
