/**
 * @module create-gateway
 * `createGateway`: the rate-limiting reverse proxy as a `node:http` request listener. Each request
 * is routed onto the card's interfaces (else 404 in JSON), its body read once (bounded) and
 * classified, its caller identified, its webhooks checked, then decided by the limiter before the
 * upstream sees a byte: a rejection is written exactly as in-process, a copy of an admitted
 * message gets the first copy's task or answer, an admitted request is forwarded in its canonical
 * form (`upstream-relay.ts`). Tasks are followed through the limiter's own tracking
 * (`task-watch.ts`, `task-follower.ts`). In-flight exchanges are counted, so a server can drain.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { REASONS } from 'a2a-ratelimit';
import type { WebhookPolicy } from 'a2a-ratelimit/push';
import { createAddressKey } from 'a2a-ratelimit/server';
import { Agent, type Dispatcher } from 'undici';
import {
  type ClassifiedRequest,
  classifyJsonRpc,
  classifyRest,
  routeRequest,
} from './classify-request.js';
import { duplicateAnswer } from './duplicate-answer.js';
import { callerExtendedCard, extendedCardBody } from './extended-card.js';
import { type GatewayAnswer, JSON_RPC_ERRORS, jsonRpcError, restError } from './gateway-answers.js';
import {
  GATEWAY_DEFAULTS,
  type GatewayIdentity,
  type GatewayOptions,
  type GatewayRefusal,
} from './gateway-options.js';
import { createGrpcHandler } from './grpc-gateway.js';
import { GrpcUpstream, grpcOriginOf } from './grpc-upstream.js';
import type { IdentityFailure } from './identity/identity-resolver.js';
import {
  encodeJsonRpcUnauthenticated,
  encodeRestUnauthenticated,
} from './identity/unauthenticated-response.js';
import { TaskFollower } from './task-follower.js';
import { TaskWatch, type WatchScope } from './task-watch.js';
import { AGENT_CARD_PATH, UpstreamCard } from './upstream-card.js';
import { credentialsOf, type TaskQuery } from './upstream-client.js';
import { unavailableRejection } from './upstream-failure.js';
import { type RelayHost, rejectionAnswer, relay, writeAnswer } from './upstream-relay.js';
import { UsageReports } from './usage-reports.js';
import { defaultWebhookPolicy, refusedWebhook, systemResolveHost } from './webhook-check.js';

/**
 * A running gateway engine: mount {@link Gateway.handler} on a `node:http` (or `https`) server.
 *
 * @example
 * ```ts
 * const gateway = createGateway({ upstream: 'http://127.0.0.1:9000', limiter, publicUrl: 'http://127.0.0.1:8080' });
 * await gateway.ready();
 * http.createServer(gateway.handler).listen(8080, '127.0.0.1');
 * ```
 */
export interface Gateway {
  /** The request listener. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /**
   * The gRPC listener: give it to a `node:http2` server's `stream` event (h2c or TLS); it relays
   * `lf.a2a.v1.A2AService` calls to the upstream's gRPC interface (see `docs/gateway.md`).
   */
  readonly grpcHandler: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void;
  /** Fetches the upstream's card once (resolves whether or not it succeeded; see `isReady`). */
  ready(): Promise<void>;
  /** Whether the upstream's card has been fetched (the gateway serves nothing before). */
  isReady(): boolean;
  /** Why the last card fetch failed, if it did. */
  cardError(): string | undefined;
  /** Requests being answered (streams included). */
  inFlight(): number;
  /** Resolves when no request is in flight, or after `deadlineMs`; true when none is left. */
  drained(deadlineMs: number): Promise<boolean>;
  /** Tasks whose life the gateway is following (leases held until they end). */
  tasksFollowed(): number;
  /** Stops refetching the card and following tasks, and closes the upstream pool it made. */
  close(): Promise<void>;
}

/** A body read, or the answer that refused it. */
async function readBody(
  req: IncomingMessage,
  maxBytes: number,
): Promise<{ text: string } | { tooLarge: true } | { aborted: true }> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    return { tooLarge: true };
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of req) {
      bytes += (chunk as Buffer).length;
      if (bytes > maxBytes) {
        req.resume();
        return { tooLarge: true };
      }
      chunks.push(chunk as Buffer);
    }
  } catch {
    return { aborted: true };
  }
  return { text: Buffer.concat(chunks).toString('utf8') };
}

/** The client address key (IPv6 by /64): the default identity. */
function addressIdentity(): (req: IncomingMessage) => GatewayIdentity {
  const keyOf = createAddressKey();
  return (req) => ({ caller: keyOf(req.socket.remoteAddress) });
}

/** The request's tenant for a refusal, when it named one. */
function tenantOf(request: ClassifiedRequest): { tenant?: string } {
  return request.tenant === undefined ? {} : { tenant: request.tenant };
}

function isJsonType(type: string | undefined): boolean {
  if (type === undefined) return true;
  const media = type.split(';')[0]?.trim().toLowerCase() ?? '';
  return media === 'application/json' || media === 'application/a2a+json' || media === '';
}

/**
 * Creates the gateway engine. The limiter is the caller's (close it after the gateway).
 *
 * @example
 * ```ts
 * import { createGateway } from 'a2a-ratelimit-gateway';
 * import { createLimiter } from 'a2a-ratelimit/server';
 * const limiter = createLimiter({ policies, domain: 'agents.example.com' });
 * const gateway = createGateway({ upstream: 'http://127.0.0.1:9000', limiter, publicUrl: 'https://agents.example.com' });
 * ```
 */
export function createGateway(options: GatewayOptions): Gateway {
  const upstream = new URL(String(options.upstream));
  const limiter = options.limiter;
  const ownDispatcher = options.dispatcher === undefined;
  const dispatcher: Dispatcher =
    // No cap on upstream connections (as nginx): each open SSE stream holds one, and a capped
    // pool would leave stream 257 waiting for a free connection until its headers timeout.
    options.dispatcher ?? new Agent({ keepAliveTimeout: 30_000 });
  const publicUrl = options.publicUrl;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const identify = options.identify ?? addressIdentity();
  /** The push SSRF policy (the default one loaded on first use), or undefined when off. */
  let webhookPolicy: Promise<WebhookPolicy> | undefined =
    options.webhookPolicy === false || options.webhookPolicy === undefined
      ? undefined
      : Promise.resolve(options.webhookPolicy);
  const checkWebhooks = options.webhookPolicy !== false;
  const resolveHost = options.resolveHost;
  const maxBodyBytes = options.maxBodyBytes ?? GATEWAY_DEFAULTS.maxBodyBytes;
  const maxJsonDepth = options.maxJsonDepth ?? GATEWAY_DEFAULTS.maxJsonDepth;
  const timeoutMs = options.upstreamTimeoutMs ?? GATEWAY_DEFAULTS.upstreamTimeoutMs;
  const polling = { ...GATEWAY_DEFAULTS.taskPolling, ...options.taskPolling };
  const onRefusal = options.onRefusal;

  const publicBase = typeof publicUrl === 'function' ? publicUrl : () => publicUrl;
  const card = new UpstreamCard({
    upstream,
    dispatcher,
    limiter,
    publicBase,
    refreshMs: options.cardRefreshMs ?? GATEWAY_DEFAULTS.cardRefreshMs,
    retryMs: GATEWAY_DEFAULTS.cardRetryMs,
    maxBytes: GATEWAY_DEFAULTS.maxCardBytes,
    log,
    ...(options.grpcPublicTarget === undefined
      ? {}
      : {
          grpcPublic:
            typeof options.grpcPublicTarget === 'function'
              ? options.grpcPublicTarget
              : () => options.grpcPublicTarget as string,
        }),
  });
  const usage =
    options.usage === undefined
      ? undefined
      : new UsageReports({
          limiter,
          path: options.usage.path,
          log,
          ...(options.usage.onIgnoredReport === undefined
            ? {}
            : { onIgnored: options.usage.onIgnoredReport }),
        });
  const watch = new TaskWatch(limiter, usage);
  const follower = new TaskFollower({
    dispatcher,
    watch,
    firstDelayMs: polling.firstDelayMs,
    maxDelayMs: polling.maxDelayMs,
    maxPolls: polling.maxPolls,
    timeoutMs,
  });
  /** Credentials and interface of each followed task's admission. */
  const queries = new Map<string, TaskQuery>();
  const queryOf = (request: ClassifiedRequest, req: IncomingMessage): TaskQuery => ({
    origin: upstream.origin,
    binding: request.binding,
    ifacePath: request.ifacePath,
    legacy: request.legacy,
    tenant: request.tenant,
    credentials: credentialsOf(req.headers),
  });
  /** Whether a task of this method holds a concurrency lease worth following. */
  const holdsTaskLease = (request: ClassifiedRequest): boolean =>
    limiter.policySet.policies.some(
      (p) => p.kind === 'concurrency' && p.methods.has(request.method),
    );

  const refused = (refusal: GatewayRefusal): void => onRefusal?.(refusal);
  const host: RelayHost = {
    dispatcher,
    origin: upstream.origin,
    limiter,
    mirrorHttpStatus: options.mirrorHttpStatus === true,
    upstreamTimeoutMs: timeoutMs,
    unavailableRetryAfterMs:
      options.unavailableRetryAfterMs ?? GATEWAY_DEFAULTS.unavailableRetryAfterMs,
    maxObservedAnswerBytes: GATEWAY_DEFAULTS.maxObservedAnswerBytes,
    watch,
    running: (taskId, request) => {
      const query = queries.get(taskId);
      // Followed while it holds a lease, or while its run's usage report is awaited.
      if (query !== undefined && (holdsTaskLease(request) || usage?.owes(taskId) === true))
        follower.follow(taskId, query);
    },
    refused,
    onUpstream: options.onUpstream,
  };

  let inFlight = 0;
  const idleWaiters = new Set<() => void>();

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

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
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
    const routed = routeRequest(verb, path, card.interfaces);
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
    if (checkWebhooks && request.webhookUrls.length > 0) {
      webhookPolicy ??= defaultWebhookPolicy();
      const why = await refusedWebhook(
        request.webhookUrls,
        await webhookPolicy,
        resolveHost ?? systemResolveHost,
      );
      if (why !== undefined) {
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
    const scope: WatchScope = {
      ticketId: ticket.needsEnd ? ticket.id : undefined,
      tenant: request.tenant,
      caller: identity.caller,
    };
    const taskQuery = queryOf(request, req);
    const running = host.running;
    await relay(
      {
        ...host,
        running: (taskId, r) => {
          if (!queries.has(taskId)) queries.set(taskId, taskQuery);
          running(taskId, r);
        },
        // The caller's extended card shows its own tier and limits.
        ...(request.method === 'GetExtendedAgentCard'
          ? {
              rewriteAnswer: (body: Buffer) =>
                extendedCardBody(binding, body, (c) =>
                  callerExtendedCard(c, limiter, identity, publicBase()),
                ),
            }
          : {}),
      },
      req,
      res,
      request,
      ticket,
      scope,
    );
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    inFlight++;
    let counted = true;
    const done = (): void => {
      if (!counted) return;
      counted = false;
      inFlight--;
      if (inFlight === 0) for (const wake of idleWaiters) wake();
    };
    res.on('close', done);
    handle(req, res).then(done, (error: unknown) => {
      log(`a2a-ratelimit gateway: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent)
        writeAnswer(res, restError(503, 'the gateway could not decide this request'));
      else res.destroy();
      done();
    });
  };

  const grpcUpstream = new GrpcUpstream(() => {
    const target = options.upstreamGrpc ?? card.grpcUrl;
    return target === undefined ? undefined : grpcOriginOf(target);
  });
  const grpcHandler = createGrpcHandler({
    upstream: grpcUpstream,
    limiter,
    watch,
    upstreamTimeoutMs: timeoutMs,
    unavailableRetryAfterMs: host.unavailableRetryAfterMs,
    maxObservedAnswerBytes: GATEWAY_DEFAULTS.maxObservedAnswerBytes,
    maxMessageBytes: maxBodyBytes,
    identify,
    ready: () => card.ready,
    cardError: () => card.lastError,
    log,
    refused,
    unavailable: (scope, method, retryAfterMs) =>
      refused({
        caller: scope.caller,
        method,
        binding: 'grpc',
        status: 503,
        policy: 'upstream',
        retryAfterMs,
      }),
    async checkWebhooks(urls) {
      if (!checkWebhooks) return undefined;
      webhookPolicy ??= defaultWebhookPolicy();
      return refusedWebhook(urls, await webhookPolicy, resolveHost ?? systemResolveHost);
    },
    // A task still running once its call ended is followed over the card's HTTP interface (GetTask
    // with the admitting call's credentials), else held until its lease TTL.
    running(taskId, call) {
      const iface = card.interfaces[0];
      const holds = limiter.policySet.policies.some(
        (p) => p.kind === 'concurrency' && p.methods.has(call.method),
      );
      if (iface === undefined || !holds) return;
      const query: TaskQuery = {
        origin: upstream.origin,
        binding: iface.binding,
        ifacePath: iface.path,
        legacy: false,
        tenant: call.scope.tenant,
        credentials: credentialsOf(call.headers),
      };
      if (!queries.has(taskId)) queries.set(taskId, query);
      follower.follow(taskId, query);
    },
    begin() {
      inFlight++;
      let counted = true;
      return () => {
        if (!counted) return;
        counted = false;
        inFlight--;
        if (inFlight === 0) for (const wake of idleWaiters) wake();
      };
    },
  });

  // Forget the query of a task no longer watched (it ended or was given up).
  const sweep = setInterval(() => {
    for (const taskId of queries.keys()) if (!watch.watching(taskId)) queries.delete(taskId);
  }, 10_000);
  sweep.unref();

  return {
    handler,
    grpcHandler,
    ready: () => card.refresh(),
    isReady: () => card.ready,
    cardError: () => card.lastError,
    inFlight: () => inFlight,
    drained(deadlineMs) {
      if (inFlight === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          idleWaiters.delete(wake);
          resolve(inFlight === 0);
        };
        const timer = setTimeout(wake, deadlineMs);
        idleWaiters.add(wake);
      });
    },
    tasksFollowed: () => watch.size(),
    async close() {
      clearInterval(sweep);
      card.close();
      follower.close();
      grpcUpstream.close();
      watch.finishAll();
      if (ownDispatcher) await dispatcher.close();
    },
  };
}
