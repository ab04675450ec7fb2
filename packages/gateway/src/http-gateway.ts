/**
 * @module http-gateway
 * The gateway's JSON-RPC and HTTP+JSON listener: each request decided before the upstream sees a
 * byte, then forwarded in its canonical form.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { REASONS } from 'a2a-ratelimit';
import { rejectionAnswer, writeAnswer } from './answer-writer.js';
import {
  type ClassifiedRequest,
  classifyJsonRpc,
  classifyRest,
  isLegacyVersion,
  routeRequest,
} from './classify-request.js';
import { duplicateAnswer } from './duplicate-answer.js';
import { callerExtendedCard, extendedCardBody } from './extended-card.js';
import { type GatewayAnswer, JSON_RPC_ERRORS, jsonRpcError, restError } from './gateway-answers.js';
import type { IdentifyRequest } from './gateway-options.js';
import type { IdentityFailure } from './identity/identity-resolver.js';
import {
  encodeJsonRpcUnauthenticated,
  encodeRestUnauthenticated,
} from './identity/unauthenticated-response.js';
import { bindingTicket, type WatchScope } from './task-watch.js';
import { AGENT_CARD_PATH, type UpstreamCard } from './upstream-card.js';
import type { TaskQuery } from './upstream-client.js';
import { unavailableRejection } from './upstream-failure.js';
import { type RelayHost, relay } from './upstream-relay.js';

/** What the HTTP listener needs from its gateway. */
export interface HttpGatewayDeps {
  /** The relay's collaborators (upstream pool, limiter, task watch, refusal hook). */
  readonly host: RelayHost;
  /** The upstream's card, rewritten, and its interfaces. */
  readonly card: UpstreamCard;
  readonly identify: IdentifyRequest;
  readonly maxBodyBytes: number;
  readonly maxJsonDepth: number;
  /** Why one of these webhook URLs is refused, or undefined when all pass (or checks are off). */
  readonly checkWebhooks: (urls: readonly string[]) => Promise<string | undefined>;
  /** The credentials and interface a followed task is polled with. */
  readonly queryOf: (request: ClassifiedRequest, req: IncomingMessage) => TaskQuery;
  /** Keeps the first admission's query for a task. */
  readonly remember: (taskId: string, query: TaskQuery) => void;
  /** The gateway's public base URL (for the caller's extended card). */
  readonly publicBase: () => string;
  /** The gateway's gRPC target, when it serves gRPC (the extended card's gRPC interface). */
  readonly grpcPublic: () => string | undefined;
}

/** A body read, or why it was not. */
type BodyRead = { text: string } | { tooLarge: true } | { aborted: true };

const TOO_LARGE: BodyRead = { tooLarge: true };
const ABORTED: BodyRead = { aborted: true };

/** A body read whole (bounded) with plain listeners: no async iterator per request. */
function readBody(req: IncomingMessage, maxBytes: number): Promise<BodyRead> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    return Promise.resolve(TOO_LARGE);
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const settle = (read: BodyRead): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAborted);
      req.off('close', onAborted);
      resolve(read);
    };
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        settle(TOO_LARGE);
        req.resume();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      settle({ text: body.toString('utf8') });
    };
    // Closed before its end: the client went away (or the stream failed).
    const onAborted = (): void => settle(ABORTED);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAborted);
    req.on('close', onAborted);
  });
}

/** The request's tenant for a refusal, when it named one. */
function tenantOf(request: ClassifiedRequest): { tenant?: string } {
  return request.tenant === undefined ? {} : { tenant: request.tenant };
}

function isJsonType(type: string | undefined): boolean {
  // The usual header, exactly: no split, trim or lower-casing.
  if (type === undefined || type === 'application/json') return true;
  const media = type.split(';')[0]?.trim().toLowerCase() ?? '';
  return media === 'application/json' || media === 'application/a2a+json' || media === '';
}

/**
 * The JSON-RPC and HTTP+JSON request handler (resolves when the exchange is answered). A request
 * is routed onto the card's interfaces (else 404 in JSON), its body read once (bounded) and
 * classified, its caller identified, its webhooks checked, then decided by the limiter: a
 * rejection is written exactly as in-process, a copy of an admitted message gets the first copy's
 * task or answer, an admitted request is relayed.
 */
export function createHttpHandler(
  deps: HttpGatewayDeps,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { host, card, identify, maxBodyBytes, maxJsonDepth, checkWebhooks, queryOf, remember } =
    deps;
  const { limiter, dispatcher, refused } = host;
  const timeoutMs = host.upstreamTimeoutMs;
  const publicBase = deps.publicBase;
  // A task still running once its answer ended is followed with its admission's credentials
  // (read from the request then, not built for every request).
  const relayHost: RelayHost = {
    ...host,
    remember: (taskId, request, req) => remember(taskId, queryOf(request, req)),
  };

  // A refused credential: 401 in the binding's format (identity module's encoders); a JWKS that
  // cannot be fetched is the gateway's trouble, not the caller's: 503 with a delay.
  const unauthenticated = (
    binding: 'jsonrpc' | 'rest',
    id: string | number | null,
    failure: IdentityFailure,
  ): GatewayAnswer => {
    if (failure.reason === 'jwks-unavailable') {
      const retryAfter = { 'retry-after': '1' };
      return binding === 'jsonrpc'
        ? jsonRpcError(id, JSON_RPC_ERRORS.internal, failure.message, 503, retryAfter)
        : restError(503, failure.message, retryAfter);
    }
    const domain = limiter.domain;
    return binding === 'jsonrpc'
      ? encodeJsonRpcUnauthenticated(failure, { domain, id })
      : encodeRestUnauthenticated(failure, { domain });
  };

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q);
    const verb = (req.method ?? 'GET').toUpperCase();
    if (path === AGENT_CARD_PATH && (verb === 'GET' || verb === 'HEAD')) {
      const text = card.text;
      if (text === undefined) {
        writeAnswer(
          res,
          restError(503, 'the agent card is not available yet', { 'retry-after': '1' }),
        );
      } else {
        writeAnswer(res, {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: text,
        });
      }
      return;
    }
    if (!card.ready) {
      req.resume();
      const retryAfter = String(Math.max(1, Math.ceil(host.unavailableRetryAfterMs / 1000)));
      const why = `the agent behind this gateway is unavailable (its card could not be fetched: ${card.lastError ?? 'not yet fetched'})`;
      writeAnswer(res, restError(503, why, { 'retry-after': retryAfter }));
      return;
    }
    const routed = routeRequest(verb, path, card.interfaces, {
      legacyRoutes: isLegacyVersion(req.headers['a2a-version']),
    });
    if (routed.kind === 'answer') {
      req.resume();
      writeAnswer(res, routed.answer);
      return;
    }
    const binding = routed.kind;
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      req.resume();
      const why = `Content-Encoding ${encoding} is not accepted; send the body unencoded`;
      writeAnswer(
        res,
        binding === 'jsonrpc'
          ? jsonRpcError(null, JSON_RPC_ERRORS.invalidRequest, why, 415)
          : restError(415, why),
      );
      return;
    }
    const needsBody = binding === 'jsonrpc' || routed.verb === 'POST';
    if (needsBody && !isJsonType(req.headers['content-type'])) {
      req.resume();
      const why = 'the body must be application/json';
      writeAnswer(
        res,
        binding === 'jsonrpc'
          ? jsonRpcError(null, JSON_RPC_ERRORS.invalidRequest, why, 415)
          : restError(415, why),
      );
      return;
    }
    let text = '';
    if (needsBody) {
      const body = await readBody(req, maxBodyBytes);
      if ('aborted' in body) return;
      if ('tooLarge' in body) {
        const why = `the body is larger than ${maxBodyBytes} bytes`;
        writeAnswer(
          res,
          binding === 'jsonrpc'
            ? jsonRpcError(null, JSON_RPC_ERRORS.invalidRequest, why, 413)
            : restError(413, why),
          { connection: 'close' },
        );
        return;
      }
      text = body.text;
    } else req.resume();
    const classified: ClassifiedRequest | GatewayAnswer =
      routed.kind === 'jsonrpc'
        ? classifyJsonRpc(text, routed.iface, query, maxJsonDepth)
        : classifyRest(routed, text, query, maxJsonDepth);
    if (!('method' in classified)) {
      writeAnswer(res, classified);
      return;
    }
    const request = classified;
    const identity = await identify(req);
    if ('unauthenticated' in identity) {
      const answer = unauthenticated(binding, request.id, identity.unauthenticated);
      refused({
        caller: '',
        method: request.method,
        binding,
        status: answer.status,
        policy: 'identity',
        reason: 'UNAUTHENTICATED',
        ...tenantOf(request),
      });
      writeAnswer(res, answer);
      return;
    }
    // A claim the caller is not believed on never reaches the agent (which may believe it).
    for (const name of identity.unbelievedHeaders ?? []) delete req.headers[name];
    // The client left while it was identified: nothing to decide.
    if (res.destroyed) return;
    const outcome = await limiter.admit({
      caller: identity.caller,
      method: request.method,
      binding,
      ...(identity.tier === undefined ? {} : { tier: identity.tier }),
      ...(request.tenant === undefined ? {} : { tenant: request.tenant }),
      ...(request.messageId === undefined ? {} : { messageId: request.messageId }),
    });
    if (outcome.status === 'rejected') {
      const answer = rejectionAnswer(host, request, outcome.rejection, outcome.limits);
      refused({
        caller: identity.caller,
        method: request.method,
        binding,
        status: answer.status,
        policy: outcome.rejection.policy,
        retryAfterMs: outcome.rejection.retryAfterMs,
        reason: outcome.rejection.reason ?? REASONS[outcome.rejection.kind],
        ...tenantOf(request),
      });
      writeAnswer(res, answer);
      return;
    }
    if (outcome.status === 'duplicate') {
      let answer: GatewayAnswer | undefined;
      try {
        answer = await duplicateAnswer(
          dispatcher,
          request,
          outcome,
          queryOf(request, req),
          timeoutMs,
        );
      } catch {
        answer = undefined;
      }
      writeAnswer(
        res,
        answer ??
          rejectionAnswer(
            host,
            request,
            unavailableRejection(
              request.method,
              host.unavailableRetryAfterMs,
              'the first copy’s task could not be read',
            ),
          ),
      );
      return;
    }
    const ticket = outcome.ticket;
    // Push URLs are checked once admitted (as the agent's push store checks them in-process): a
    // refused caller's URLs cost no DNS lookup, which a spent caller could otherwise have made
    // the gateway run for it without bound.
    if (request.webhookUrls.length > 0) {
      let why: string | undefined;
      try {
        why = await checkWebhooks(request.webhookUrls);
      } catch (error) {
        ticket.end();
        throw error;
      }
      if (why !== undefined) {
        ticket.end();
        refused({
          caller: identity.caller,
          method: request.method,
          binding,
          status: 400,
          policy: 'webhook',
          reason: 'WEBHOOK_REFUSED',
          ...tenantOf(request),
        });
        const message = `push notification URL refused: ${why}`;
        writeAnswer(
          res,
          binding === 'jsonrpc'
            ? jsonRpcError(request.id, JSON_RPC_ERRORS.invalidParams, message)
            : restError(400, message),
        );
        return;
      }
    }
    const scope: WatchScope = {
      ticketId: bindingTicket(request.method, ticket),
      tenant: request.tenant,
      caller: identity.caller,
    };
    await relay(
      relayHost,
      req,
      res,
      request,
      ticket,
      scope,
      // The caller's extended card shows its own tier and limits.
      request.method === 'GetExtendedAgentCard'
        ? {
            rewriteAnswer: (body: Buffer) =>
              extendedCardBody(binding, body, (c) =>
                callerExtendedCard(c, limiter, identity, publicBase(), deps.grpcPublic()),
              ),
          }
        : undefined,
    );
  };
}
