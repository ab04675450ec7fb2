/**
 * @module fetch-card-learning
 * What the retrying `fetch` learns from responses passing through it: agent cards (public and
 * extended) and the end of a planned stream.
 */

import { agentCardTargets } from './agent-card-targets.js';
import { readWholeBody } from './read-body-prefix.js';
import type { RetryScheduler } from './retry-scheduler.js';

/**
 * Card bodies read at most, bytes (a card is a few KiB): counted as they arrive, whatever the
 * framing; a longer card is not learned, and a public card's response reaches the SDK cut there.
 *
 * @example
 * ```ts
 * capResponseBody(response, MAX_CARD_BYTES, 'agent card');
 * ```
 */
export const MAX_CARD_BYTES = 1_048_576;

/**
 * Whether a request fetches a public agent card (A2A 1.0 `agent-card.json`, v0.3 `agent.json`).
 *
 * @example
 * ```ts
 * isAgentCardRequest('GET', 'https://a.example/.well-known/agent-card.json'); // true
 * ```
 */
export function isAgentCardRequest(httpMethod: string, url: string): boolean {
  if (httpMethod.toUpperCase() !== 'GET') return false;
  try {
    return /\/\.well-known\/agent(-card)?\.json$/.test(new URL(url).pathname);
  } catch {
    return false;
  }
}

async function jsonOf(response: Response): Promise<unknown> {
  // A declared length over the cap is refused unread; any other is not trusted, bytes are counted.
  const length = Number(response.headers.get('content-length') ?? '0');
  if (!response.ok || length > MAX_CARD_BYTES) return undefined;
  const text = await readWholeBody(response, MAX_CARD_BYTES);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Learns the policies of a public card that was just fetched: for the agent keys of the URL it
 * came from and of the interfaces it lists on that same host (HTTP interfaces of the card's own
 * origin, gRPC targets on its host name). A card never plans for another host: a card served by
 * one origin that lists another's URLs would otherwise set that agent's pace. Never throws; the
 * response is untouched.
 *
 * @example
 * ```ts
 * const response = await fetch(cardUrl);
 * await learnAgentCardResponse(scheduler, cardUrl, response, (u) => u.origin);
 * ```
 */
export async function learnAgentCardResponse(
  scheduler: RetryScheduler,
  url: string,
  response: Response,
  agentKey: (url: URL) => string,
): Promise<void> {
  const card = await jsonOf(response);
  if (card === undefined) return;
  let from: URL;
  try {
    from = new URL(url);
  } catch {
    return;
  }
  const targets = agentCardTargets(card);
  const agents = new Set<string>(
    targets.grpcTargets.filter((target) => grpcHostOf(target) === from.hostname),
  );
  agents.add(agentKey(from));
  for (const u of targets.httpUrls) {
    try {
      const parsed = new URL(u);
      if (parsed.origin === from.origin) agents.add(agentKey(parsed));
    } catch {
      // not an URL: no key
    }
  }
  scheduler.learnAgentCard(card, { agents: [...agents] });
}

/** The host name of a gRPC target (`host:port`, `[v6]:port`, `dns:///host:port`), lower case. */
function grpcHostOf(target: string): string {
  const bare = target.replace(/^[a-z]+:(\/\/\/)?/i, '');
  const v6 = /^\[([^\]]+)\]/.exec(bare);
  if (v6 !== null) return `[${(v6[1] as string).toLowerCase()}]`;
  return (bare.split(':')[0] ?? '').toLowerCase();
}

/**
 * Learns a caller's extended card from a successful `GetExtendedAgentCard` answer (the JSON-RPC
 * `result`, or the REST body). Never throws; the response is untouched.
 *
 * @example
 * ```ts
 * await learnExtendedCardResponse(scheduler, response, 'jsonrpc', { agent: origin, caller });
 * ```
 */
export async function learnExtendedCardResponse(
  scheduler: RetryScheduler,
  response: Response,
  binding: 'jsonrpc' | 'rest',
  who: { readonly agent: string; readonly caller: string },
): Promise<void> {
  const body = await jsonOf(response);
  const card =
    binding === 'jsonrpc' && typeof body === 'object' && body !== null
      ? (body as { result?: unknown }).result
      : body;
  scheduler.learnAgentCard(card, { agents: [who.agent], caller: who.caller });
}

/**
 * The same response with a body that reports its end (read to the end, failed, or cancelled), for
 * a stream the agent counts in flight until it closes.
 *
 * @example
 * ```ts
 * const { response: tracked, ended } = trackBodyEnd(response);
 * ended.then(() => console.log('stream closed'));
 * ```
 */
export function trackBodyEnd(response: Response): { response: Response; ended: Promise<void> } {
  const source = response.body;
  if (source === null) return { response, ended: Promise.resolve() };
  let finish: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          finish();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  const tracked = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  return { response: tracked, ended };
}
