/**
 * @module create-gateway
 * `createGateway`: builds the rate-limiting reverse proxy's parts — the upstream's card, task
 * following, usage reports, the HTTP listener (`http-gateway.ts`) and the gRPC one
 * (`grpc-gateway.ts`) — and counts in-flight exchanges so a server can drain.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { WebhookPolicy } from 'a2a-ratelimit/push';
import { createAddressKey } from 'a2a-ratelimit/server';
import { Agent, type Dispatcher } from 'undici';
import { writeAnswer } from './answer-writer.js';
import type { ClassifiedRequest } from './classify-request.js';
import { restError } from './gateway-answers.js';
import {
  GATEWAY_DEFAULTS,
  type GatewayIdentity,
  type GatewayOptions,
  type GatewayRefusal,
} from './gateway-options.js';
import { createGrpcHandler } from './grpc-gateway.js';
import { GrpcUpstream, grpcOriginOf } from './grpc-upstream.js';
import { createHttpHandler } from './http-gateway.js';
import { TaskFollower } from './task-follower.js';
import { TaskWatch } from './task-watch.js';
import { UpstreamCard } from './upstream-card.js';
import { credentialsOf, type TaskQuery } from './upstream-client.js';
import type { RelayHost } from './upstream-relay.js';
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

/** The client address key (IPv6 by /64): the default identity. */
function addressIdentity(): (req: IncomingMessage) => GatewayIdentity {
  const keyOf = createAddressKey();
  return (req) => ({ caller: keyOf(req.socket.remoteAddress) });
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
  /** The gRPC target the card advertises, when the gateway serves gRPC. */
  const grpcPublic = (): string | undefined =>
    typeof options.grpcPublicTarget === 'function'
      ? options.grpcPublicTarget()
      : options.grpcPublicTarget;
  const card = new UpstreamCard({
    upstream,
    dispatcher,
    limiter,
    publicBase,
    refreshMs: options.cardRefreshMs ?? GATEWAY_DEFAULTS.cardRefreshMs,
    retryMs: GATEWAY_DEFAULTS.cardRetryMs,
    maxBytes: GATEWAY_DEFAULTS.maxCardBytes,
    log,
    grpcPublic,
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

  // The operator's hooks run inside the exchange: one that throws is logged, never lets the error
  // escape into the relay (where it would leave an admission unended and the client unanswered).
  const guarded = <A>(name: string, hook: ((arg: A) => void) | undefined) =>
    hook === undefined
      ? undefined
      : (arg: A): void => {
          try {
            hook(arg);
          } catch (error) {
            log(`a2a-ratelimit gateway: the ${name} hook threw: ${(error as Error).message}`);
          }
        };
  const onRefusalHook = guarded('onRefusal', onRefusal);
  const refused = (refusal: GatewayRefusal): void => onRefusalHook?.(refusal);
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
    onUpstream: guarded('onUpstream', options.onUpstream),
  };

  let inFlight = 0;
  const idleWaiters = new Set<() => void>();

  const checkWebhookUrls = async (urls: readonly string[]): Promise<string | undefined> => {
    if (!checkWebhooks) return undefined;
    webhookPolicy ??= defaultWebhookPolicy();
    return refusedWebhook(urls, await webhookPolicy, resolveHost ?? systemResolveHost);
  };
  const remember = (taskId: string, query: TaskQuery): void => {
    if (!queries.has(taskId)) queries.set(taskId, query);
  };
  const handle = createHttpHandler({
    host,
    card,
    identify,
    maxBodyBytes,
    maxJsonDepth,
    checkWebhooks: checkWebhookUrls,
    queryOf,
    remember,
    publicBase,
    grpcPublic,
  });

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
    readTimeoutMs: options.grpcReadTimeoutMs ?? GATEWAY_DEFAULTS.grpcReadTimeoutMs,
    identify,
    ready: () => card.ready,
    cardError: () => card.lastError,
    log,
    refused,
    publicBase,
    grpcPublicTarget: grpcPublic,
    unavailable: (scope, method, retryAfterMs) =>
      refused({
        caller: scope.caller,
        method,
        binding: 'grpc',
        status: 503,
        policy: 'upstream',
        retryAfterMs,
      }),
    checkWebhooks: checkWebhookUrls,
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
      remember(taskId, query);
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
