/**
 * @module create-retrying-fetch
 * `createRetryingFetch`: a `fetch` for the SDK's JSON-RPC and REST transports that re-sends A2A
 * calls through the shared `RetryScheduler`.
 */

import { extractRetryHint } from '../wire/extract-retry-hint.js';
import { readRateLimitHeaders } from '../wire/ratelimit-headers.js';
import { callerFingerprint } from './caller-fingerprint.js';
import {
  isAgentCardRequest,
  learnAgentCardResponse,
  learnExtendedCardResponse,
  MAX_CARD_BYTES,
  trackBodyEnd,
} from './fetch-card-learning.js';
import { identifyA2ARequest } from './identify-a2a-request.js';
import { capResponseBody, readBodyPrefix } from './read-body-prefix.js';
import {
  type AttemptOutcome,
  RetryScheduler,
  type RetrySchedulerOptions,
} from './retry-scheduler.js';

/**
 * Options of {@link createRetryingFetch}: the scheduler's options (used when no `scheduler` is
 * given) plus where to send and how to tell agents and callers apart.
 *
 * @example
 * ```ts
 * const fetchImpl = createRetryingFetch({ budgetMs: 30_000, agentDeduplicates: true });
 * ```
 */
export interface RetryingFetchOptions extends RetrySchedulerOptions {
  /** The fetch that actually sends. @defaultValue globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** A scheduler to share pacing with other transports (its own options then apply). */
  readonly scheduler?: RetryScheduler;
  /**
   * The caller identity the agent limits by; calls of different callers never wait for each other.
   * @defaultValue a fingerprint of the `Authorization` header (never stored in clear)
   */
  readonly callerKey?: (request: Request) => string;
  /** Which agent a URL belongs to. @defaultValue the URL's origin */
  readonly agentKey?: (url: URL) => string;
}

/**
 * Creates a retrying `fetch`. Give it to the SDK's HTTP transports; the SDK's own errors still
 * come out for failures that are not rate limits, and `RateLimitedError`,
 * `AgentOverloadedError` or `RetryBudgetExceededError` come out when the client stops on a limit.
 * A retry re-sends the identical request bytes. Requests that are not A2A operations pass through
 * untouched, except that a public agent card's body is cut at 1 MiB; a card going by is learned.
 *
 * @example
 * ```ts
 * import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
 * import { createRetryingFetch } from 'a2a-ratelimit/client';
 *
 * const fetchImpl = createRetryingFetch({ budgetMs: 60_000, maxSingleWaitMs: 30_000 });
 * const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
 *   transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
 * }));
 * const client = await factory.createFromUrl('https://agent.example');
 * ```
 */
export function createRetryingFetch(options: RetryingFetchOptions = {}): typeof fetch {
  const scheduler = options.scheduler ?? new RetryScheduler(options);
  const callerKey = options.callerKey ?? defaultCallerKey;
  const agentKey = options.agentKey ?? ((url: URL) => url.origin);

  const retryingFetch = async (
    input: string | URL | Request,
    init?: RequestInit,
  ): Promise<Response> => {
    const baseFetch = options.fetch ?? globalThis.fetch;
    const request = new Request(input, init);
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    const body = request.body === null ? undefined : new Uint8Array(await request.arrayBuffer());
    const a2a = identifyA2ARequest({
      httpMethod: request.method,
      url: request.url,
      bodyText: body === undefined ? undefined : new TextDecoder().decode(body),
    });
    // Every attempt sends the same bytes, so the same messageId.
    const send = (): Promise<Response> =>
      baseFetch(request.url, {
        ...init,
        method: request.method,
        headers: request.headers,
        ...(body === undefined ? {} : { body }),
        ...(signal ? { signal } : {}),
      });
    if (a2a === undefined) {
      if (!isAgentCardRequest(request.method, request.url)) return send();
      // A card larger than any card (a hostile or broken agent) fails the SDK's read at the cap.
      const response = capResponseBody(await send(), MAX_CARD_BYTES, 'agent card');
      await learnAgentCardResponse(scheduler, request.url, response, agentKey);
      return response;
    }
    const agent = agentKey(new URL(request.url));
    const caller = callerKey(request);

    const answer = await scheduler.run(
      {
        agent,
        caller,
        method: a2a.method,
        signal: signal ?? undefined,
      },
      async (): Promise<AttemptOutcome<Response>> => {
        let response: Response;
        try {
          response = await send();
        } catch (error) {
          if (signal?.aborted) throw error;
          return {
            ok: false,
            hint: extractRetryHint({ kind: 'error', error }, scheduler.nowMs()),
            failure: { error },
          };
        }
        const rateLimit = readRateLimitHeaders(response.headers, scheduler.nowMs());
        const isEventStream = (response.headers.get('content-type') ?? '').startsWith(
          'text/event-stream',
        );
        // A stream that started is never retried: once its first event may be out, it is the SDK's.
        if (response.ok && isEventStream && scheduler.pacers.knows(agent, caller)) {
          // A planned stream counts in flight until its body ends.
          const { response: tracked, ended } = trackBodyEnd(response);
          return { ok: true, value: tracked, rateLimit, busyUntil: ended };
        }
        if (response.ok && (isEventStream || (a2a.binding === 'rest' && !a2a.streaming))) {
          return { ok: true, value: response, rateLimit };
        }
        // At most 64 KiB, at most 10 s, of a clone: a huge or endless body is not buffered.
        const text = await readBodyPrefix(response);
        // JSON-RPC answers errors (rate limits included) with HTTP 200 by default.
        if (response.ok && !hasJsonRpcError(text)) return { ok: true, value: response, rateLimit };
        const hint = extractRetryHint(
          { kind: 'http', status: response.status, headers: response.headers, body: text },
          scheduler.nowMs(),
        );
        return { ok: false, hint, failure: { value: response } };
      },
    );
    if (a2a.method === 'GetExtendedAgentCard') {
      await learnExtendedCardResponse(scheduler, answer, a2a.binding, { agent, caller });
    }
    return answer;
  };
  return retryingFetch as typeof fetch;
}

function hasJsonRpcError(text: string): boolean {
  if (!text.includes('"error"')) return false;
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && 'error' in parsed;
  } catch {
    return false;
  }
}

function defaultCallerKey(request: Request): string {
  return callerFingerprint(request.headers.get('authorization'));
}
