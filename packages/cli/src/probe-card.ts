/**
 * @module probe-card
 * What `probe` reads from an agent card: the interfaces and the rate-limit extension's ErrorInfo
 * domain.
 */

import { RATE_LIMIT_EXTENSION_URI } from 'a2a-ratelimit/server';
import { CliError } from './cli-error.js';
import { PROBE_MAX_CARD_BYTES, readCappedText } from './probe-capped-body.js';
import { networkReason } from './probe-transport.js';

/**
 * The URL of a path on the base URL: `base path + path` (so a base with a prefix keeps it).
 *
 * @example
 * ```ts
 * joinBasePath(new URL('http://gw/agents/research'), '/a2a/rest'); // 'http://gw/agents/research/a2a/rest'
 * ```
 */
export function joinBasePath(base: URL, path: string): string {
  const prefix = base.pathname.replace(/\/+$/, '');
  const suffix = path.startsWith('/') ? path : `/${path}`;
  return `${base.origin}${prefix}${suffix}`;
}

/** One of the card's `supportedInterfaces`. */
export interface CardInterface {
  readonly url: string;
  readonly protocolBinding: string;
}

/** What `probe` took from the card. */
export interface CardReading {
  readonly cardUrl: string;
  readonly interfaces: readonly CardInterface[];
  /** The ErrorInfo domain the rate-limit extension announces, if the card has it. */
  readonly errorDomain?: string;
}

/**
 * Reads the agent card at `<base>/.well-known/agent-card.json`, at most
 * {@link PROBE_MAX_CARD_BYTES} of it; a `CliError` names what is wrong (unreachable, no card, not
 * JSON, no interfaces, larger than the cap).
 *
 * @example
 * ```ts
 * const card = await readCard(new URL('http://127.0.0.1:8080'), fetch, 10_000);
 * ```
 */
export async function readCard(
  base: URL,
  doFetch: typeof fetch,
  timeoutMs: number,
): Promise<CardReading> {
  const cardUrl = joinBasePath(base, '/.well-known/agent-card.json');
  let response: Response;
  let text: string;
  let truncated: boolean;
  try {
    response = await doFetch(cardUrl, {
      headers: { accept: 'application/json', 'a2a-version': '1.0' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    ({ text, truncated } = await readCappedText(response, PROBE_MAX_CARD_BYTES));
  } catch (error) {
    const reason =
      (error as Error).name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : networkReason(error);
    throw new CliError(`cannot reach the agent at ${base.href}: ${reason}`, { cause: error });
  }
  if (!response.ok) {
    throw new CliError(
      `no agent card at ${cardUrl} (HTTP ${response.status}): is ${base.href} an A2A agent's base URL?`,
    );
  }
  if (truncated) {
    throw new CliError(
      `the agent card at ${cardUrl} is larger than ${PROBE_MAX_CARD_BYTES} bytes: probe reads no further`,
    );
  }
  let card: unknown;
  try {
    card = JSON.parse(text);
  } catch {
    throw new CliError(
      `${cardUrl} is not JSON (${response.headers.get('content-type') ?? 'no Content-Type'}): is ${base.href} an A2A agent's base URL?`,
    );
  }
  const c = card as {
    supportedInterfaces?: unknown;
    capabilities?: { extensions?: { uri?: unknown; params?: { errorDomain?: unknown } }[] };
  };
  const interfaces = Array.isArray(c.supportedInterfaces)
    ? c.supportedInterfaces.filter(
        (i): i is CardInterface =>
          typeof (i as CardInterface)?.url === 'string' &&
          typeof (i as CardInterface)?.protocolBinding === 'string',
      )
    : [];
  if (interfaces.length === 0) {
    throw new CliError(
      `the agent card at ${cardUrl} lists no supportedInterfaces (an A2A 1.0 card is needed)`,
    );
  }
  const extension = Array.isArray(c.capabilities?.extensions)
    ? c.capabilities.extensions.find((e) => e?.uri === RATE_LIMIT_EXTENSION_URI)
    : undefined;
  const errorDomain = extension?.params?.errorDomain;
  return {
    cardUrl,
    interfaces,
    ...(typeof errorDomain === 'string' ? { errorDomain } : {}),
  };
}

/**
 * The `host:port` of a card's gRPC interface URL (`grpc://h:p`, `http://h:p`, or a bare `h:p`).
 *
 * @example
 * ```ts
 * grpcTargetOf('127.0.0.1:50051'); // '127.0.0.1:50051'
 * grpcTargetOf('https://agent.example.com'); // 'agent.example.com:443'
 * ```
 */
export function grpcTargetOf(url: string): string | undefined {
  if (/^(\[[0-9a-f:.]+\]|[^:/\s]+):\d{1,5}$/i.test(url)) return url;
  try {
    const parsed = new URL(url);
    const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
    return parsed.hostname === '' ? undefined : `${parsed.host.replace(/:\d+$/, '')}:${port}`;
  } catch {
    return undefined;
  }
}
