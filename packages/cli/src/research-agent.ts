/**
 * @module research-agent
 * The example research agent behind `demo` and `serve`: SDK wiring on all three bindings with this
 * library's admission in front.
 */

import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH, AgentCard } from '@a2a-js/sdk';
import {
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type User,
} from '@a2a-js/sdk/server';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { A2AMethod, Clock, HoldOptions, Policy, Store } from 'a2a-ratelimit';
import {
  type AdmissionRequest,
  createLimiter,
  followPolicyChanges,
  type Limiter,
  type LimiterOptions,
  withRateLimitExtension,
} from 'a2a-ratelimit/server';
import { rateLimitedJsonRpcHandler, rateLimitedRestHandler } from 'a2a-ratelimit/server/express';
import {
  grpcAdmissionInterceptor,
  rateLimitedGrpcService,
  rateLimitedServiceDefinition,
} from 'a2a-ratelimit/server/grpc';
import type { createRateLimitMetrics } from 'a2a-ratelimit/server/metrics';
import express from 'express';
import { bindGrpc, isWildcard, listenHttp, urlHost } from './agent-listen.js';
import { bareErrorLimiter } from './bare-error-limiter.js';
import { CliError } from './cli-error.js';
import { bearerUser, DemoTiers } from './demo-auth.js';
import { metricsIfInstalled } from './optional-metrics.js';
import { type ResearchTask, researchExecutor, type TaskCounter } from './research-executor.js';

/** The metrics `createRateLimitMetrics` returns. */
type RateLimitMetrics = ReturnType<typeof createRateLimitMetrics>;

/**
 * How the agent writes a rejection: `ours` (429 / RESOURCE_EXHAUSTED with ErrorInfo, RetryInfo,
 * QuotaFailure, `Retry-After`, `RateLimit`) or `bare-500` (a spec-literal bare internal error).
 *
 * @example
 * ```ts
 * const encoding: RejectionEncoding = REJECTION_ENCODINGS.bare500;
 * ```
 */
export const REJECTION_ENCODINGS = { ours: 'ours', bare500: 'bare-500' } as const;

/**
 * One of {@link REJECTION_ENCODINGS}.
 */
export type RejectionEncoding = (typeof REJECTION_ENCODINGS)[keyof typeof REJECTION_ENCODINGS];

/**
 * A request the agent decided, reported as it happened (server side).
 */
export interface AgentRequestEvent {
  /** When, ms on the agent's clock. */
  readonly atMs: number;
  readonly binding: AdmissionRequest['binding'];
  readonly method: A2AMethod;
  readonly caller: string;
  readonly messageId: string | undefined;
  /** `duplicate`: a copy of an already admitted message, answered with its task. */
  readonly outcome: 'admitted' | 'rejected' | 'duplicate';
  /** Admitted by claiming the slot its earlier rejection reserved. */
  readonly claimedHold?: boolean;
  /** The delay the rejection named, ms (exact, before rounding to wire seconds). */
  readonly retryAfterMs?: number;
  /** The policy that rejected it. */
  readonly policy?: string;
}

/**
 * Options of {@link startResearchAgent}.
 */
export interface ResearchAgentOptions {
  /** Interface to listen on; default `127.0.0.1`. */
  readonly host?: string;
  /** HTTP port (JSON-RPC, REST, card, metrics); 0 = any free port. Default 0. */
  readonly port?: number;
  /** gRPC port; 0 = any free port. Default 0. */
  readonly grpcPort?: number;
  /** Policies (ignored when `store` brings its own). */
  readonly policies: readonly Policy[];
  /** Hold options of the default in-memory store. */
  readonly holds?: HoldOptions;
  /** A shared store (e.g. a `RedisStore`); default an in-memory store over `policies`. */
  readonly store?: Store;
  /** The limiter's clock; default the system clock. */
  readonly clock?: Clock;
  /** ErrorInfo domain; default the host of `publicUrl`, else `host` (`localhost` for a wildcard). */
  readonly domain?: string;
  /** Base URL advertised in the agent card (e.g. a gateway's); default `http://<host>:<port>`. */
  readonly publicUrl?: string;
  /** gRPC address advertised in the card; default `<host>:<grpcPort>`. */
  readonly publicGrpcTarget?: string;
  /** JSON-RPC rejections with HTTP 429 / 503 instead of 200. */
  readonly mirrorHttpStatus?: boolean;
  /** How rejections are written; default `ours`. */
  readonly encoding?: RejectionEncoding;
  /** Serve Prometheus metrics at `/metrics`; default: when prom-client is installed. */
  readonly metrics?: boolean;
  /** Called for every request the limiter decided. */
  readonly onRequest?: (event: AgentRequestEvent) => void;
  /** How long each task works before it completes, on `sleep`'s time; default 0 (at once). */
  readonly task?: ResearchTask;
  /**
   * Serves an extended card (`GetExtendedAgentCard`): what an authenticated caller gets, from the
   * public card (e.g. its own tier in the rate-limit extension). Default: no extended card.
   */
  readonly extendedCard?: (publicCard: AgentCard, user: User | undefined) => AgentCard;
}

/**
 * A running research agent.
 *
 * @example
 * ```ts
 * const agent = await startResearchAgent({ policies: [WORKED_EXAMPLE_POLICY] });
 * console.log(agent.cardUrl);
 * await agent.close();
 * ```
 */
export interface ResearchAgent {
  /** `http://host:port` the HTTP server listens on. */
  readonly baseUrl: string;
  readonly cardUrl: string;
  readonly jsonRpcUrl: string;
  readonly restUrl: string;
  readonly metricsUrl: string | undefined;
  /** `host:port` of the gRPC server. */
  readonly grpcTarget: string;
  readonly httpPort: number;
  readonly grpcPort: number;
  /** The public agent card (with the rate-limit extension unless the encoding is `bare-500`). */
  readonly card: AgentCard;
  readonly limiter: Limiter;
  readonly metrics: RateLimitMetrics | undefined;
  /** Tasks working right now, and the most that ever worked at once. */
  readonly tasks: { readonly running: number; readonly peak: number };
  /** Stops both servers, releases their ports, and closes the limiter (and its store). */
  close(): Promise<void>;
}

/** Demo tokens per message a task reports as its usage (`limiter.usageOf(task).report`), units. */
export const DEMO_TOKENS_PER_MESSAGE = 4_000;

/** What the limiter tells its `observer` about each decision. */
type LimiterObserver = NonNullable<LimiterOptions['observer']>;

function combineObservers(...observers: (LimiterObserver | undefined)[]): LimiterObserver {
  const list = observers.filter((o): o is LimiterObserver => o !== undefined);
  return {
    admitted: (request, admission) => {
      for (const o of list) o.admitted?.(request, admission);
    },
    rejected: (request, rejection) => {
      for (const o of list) o.rejected?.(request, rejection);
    },
    deduplicated: (request) => {
      for (const o of list) o.deduplicated?.(request);
    },
    holds: (event, policy, count) => {
      for (const o of list) o.holds?.(event, policy, count);
    },
    leasesHeld: (count) => {
      for (const o of list) o.leasesHeld?.(count);
    },
    shadowRejected: (request, rejection) => {
      for (const o of list) o.shadowRejected?.(request, rejection);
    },
    // Without it the metrics never see the limiter: no store mode, overload inputs or set version.
    attached: (gauges) => {
      for (const o of list) o.attached?.(gauges);
    },
  };
}

/**
 * Starts the research agent on all three bindings: JSON-RPC at `/a2a/jsonrpc`, REST at
 * `/a2a/rest`, the card at `/.well-known/agent-card.json`, metrics at `/metrics`, gRPC on its own
 * port. Listening errors (a port in use) are {@link CliError}s. Every request the agent decides is
 * reported (server side) so the demo counts what the agent saw; the bearer token is the caller's
 * name, and no token means an anonymous caller keyed by its address.
 *
 * @example
 * ```ts
 * const agent = await startResearchAgent({ policies: [WORKED_EXAMPLE_POLICY], port: 8080, grpcPort: 50051 });
 * ```
 */
export async function startResearchAgent(options: ResearchAgentOptions): Promise<ResearchAgent> {
  const host = options.host ?? '127.0.0.1';
  const encoding = options.encoding ?? 'ours';
  const metrics = options.metrics === false ? undefined : await metricsIfInstalled();
  const clock = options.clock;
  const onRequest = options.onRequest;
  const nowMs = (): number => (clock === undefined ? Date.now() : clock.nowMs());
  /** The fields every reported event shares. */
  const seen = (request: AdmissionRequest) => ({
    atMs: nowMs(),
    binding: request.binding,
    method: request.method,
    caller: request.caller,
    messageId: request.messageId,
  });
  const reporter: LimiterObserver | undefined =
    onRequest === undefined
      ? undefined
      : {
          admitted: (request, admission) =>
            onRequest({
              ...seen(request),
              outcome: 'admitted',
              claimedHold: admission.claimedHold,
            }),
          rejected: (request, rejection) =>
            onRequest({
              ...seen(request),
              outcome: 'rejected',
              retryAfterMs: rejection.retryAfterMs,
              policy: rejection.policy,
            }),
          deduplicated: (request) => onRequest({ ...seen(request), outcome: 'duplicate' }),
        };
  const publicUrl = options.publicUrl === undefined ? undefined : new URL(options.publicUrl);
  const domain =
    options.domain ??
    (publicUrl !== undefined ? publicUrl.hostname : isWildcard(host) ? 'localhost' : host);

  const demoTiers = new DemoTiers();
  const decided = createLimiter({
    ...(options.store === undefined ? { policies: options.policies } : { store: options.store }),
    tierOf: (request) => demoTiers.of(request.caller),
    ...(options.holds === undefined || options.store !== undefined ? {} : { holds: options.holds }),
    ...(clock === undefined ? {} : { clock }),
    domain: domain.replace(/^\[|\]$/g, ''),
    observer: combineObservers(metrics?.observer, reporter),
  });
  const limiter = encoding === 'bare-500' ? bareErrorLimiter(decided) : decided;

  const baseCard = AgentCard.fromJSON({
    name: 'research-agent',
    description:
      'Example research agent of a2a-ratelimit: send it a topic, it answers with a completed task.',
    version: '0.1.0',
    supportedInterfaces: [],
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: options.extendedCard !== undefined,
    },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'research',
        name: 'Research',
        description: 'Writes short research notes on a topic.',
        tags: ['research'],
      },
    ],
  });
  // The card object the SDK holds is this one; its interfaces are filled in once ports are known.
  const card = encoding === 'ours' ? withRateLimitExtension(baseCard, limiter) : baseCard;
  // A live policy change (`serve --config` reloading) shows on the card at once.
  const stopFollowing = encoding === 'ours' ? followPolicyChanges(card, limiter) : () => {};
  const counter: TaskCounter = { running: 0, peak: 0 };
  const extendedCard = options.extendedCard;
  const requestHandler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    researchExecutor(counter, options.task, (ctx) => {
      // The demo's usage: a fixed, documented number of tokens per message, charged once the
      // task has run to the usage policies (unit set) of the caller whose admission started it.
      void decided
        .usageOf(ctx)
        .report(DEMO_TOKENS_PER_MESSAGE)
        .catch(() => undefined);
    }),
    limiter.trackTasks(new DefaultExecutionEventBusManager()),
    undefined,
    undefined,
    extendedCard === undefined ? undefined : async (ctx) => extendedCard(card, ctx.user),
  );

  const expressUsers = async (req: express.Request): Promise<User> => {
    demoTiers.note(req.headers.authorization);
    return bearerUser(req.headers.authorization);
  };
  const grpcUsers = async (call: { metadata: grpc.Metadata }): Promise<User> => {
    const value = call.metadata.get('authorization')[0];
    demoTiers.note(value);
    return bearerUser(value);
  };
  const mirror =
    options.mirrorHttpStatus === undefined ? {} : { mirrorHttpStatus: options.mirrorHttpStatus };

  const app = express();
  app.disable('x-powered-by');
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: async () => card }));
  const sdk = { requestHandler, userBuilder: expressUsers };
  app.use('/a2a/jsonrpc', rateLimitedJsonRpcHandler(limiter, { ...sdk, admission: mirror }));
  app.use('/a2a/rest', rateLimitedRestHandler(limiter, sdk));
  if (metrics !== undefined) {
    app.get('/metrics', async (_req, res) => {
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    });
  }

  const grpcServer = new grpc.Server({
    interceptors: [grpcAdmissionInterceptor(limiter, { userBuilder: grpcUsers, requestHandler })],
  });
  grpcServer.addService(
    rateLimitedServiceDefinition(A2AService),
    rateLimitedGrpcService({ requestHandler, userBuilder: grpcUsers }),
  );

  let httpServer: HttpServer | undefined;
  try {
    httpServer = await listenHttp(app, host, options.port ?? 0);
    const grpcPort = await bindGrpc(grpcServer, host, options.grpcPort ?? 0);
    const httpPort = (httpServer.address() as AddressInfo).port;
    const shownHost = urlHost(isWildcard(host) ? '127.0.0.1' : host);
    const baseUrl = `http://${shownHost}:${httpPort}`;
    const advertised = (publicUrl?.href ?? baseUrl).replace(/\/+$/, '');
    const grpcTarget = `${shownHost}:${grpcPort}`;
    card.supportedInterfaces.push(
      {
        url: `${advertised}/a2a/jsonrpc`,
        protocolBinding: 'JSONRPC',
        tenant: '',
        protocolVersion: '1.0',
      },
      {
        url: `${advertised}/a2a/rest`,
        protocolBinding: 'HTTP+JSON',
        tenant: '',
        protocolVersion: '1.0',
      },
      {
        url: options.publicGrpcTarget ?? grpcTarget,
        protocolBinding: 'GRPC',
        tenant: '',
        protocolVersion: '1.0',
      },
    );
    const server = httpServer;
    let closed: Promise<void> | undefined;
    return {
      baseUrl,
      cardUrl: `${baseUrl}/${AGENT_CARD_PATH}`,
      jsonRpcUrl: `${baseUrl}/a2a/jsonrpc`,
      restUrl: `${baseUrl}/a2a/rest`,
      metricsUrl: metrics === undefined ? undefined : `${baseUrl}/metrics`,
      grpcTarget,
      httpPort,
      grpcPort,
      card,
      limiter,
      metrics,
      tasks: counter,
      close() {
        closed ??= (async () => {
          await Promise.all([
            new Promise<void>((resolve) => {
              server.closeAllConnections();
              server.close(() => resolve());
            }),
            new Promise<void>((resolve) => {
              const force = setTimeout(() => {
                grpcServer.forceShutdown();
                resolve();
              }, 1000);
              force.unref();
              grpcServer.tryShutdown(() => {
                clearTimeout(force);
                resolve();
              });
            }),
          ]);
          stopFollowing();
          await decided.close();
        })();
        return closed;
      },
    };
  } catch (error) {
    httpServer?.closeAllConnections();
    httpServer?.close();
    grpcServer.forceShutdown();
    await decided.close();
    throw error;
  }
}
