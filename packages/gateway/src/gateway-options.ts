/**
 * @module gateway-options
 * What `createGateway` takes — upstream, limiter, identity, bounds — and their defaults.
 */

import type { IncomingMessage } from 'node:http';
import type { WebhookPolicy } from 'a2a-ratelimit/push';
import type { Limiter } from 'a2a-ratelimit/server';
import type { Dispatcher } from 'undici';
import type { IdentityFailure } from './identity/identity-resolver.js';
import type { IgnoredUsageReport } from './usage-reports.js';
import type { ResolveHost } from './webhook-check.js';

/**
 * Who a request is from: a caller key (and optionally its tier), or why it is refused (answered
 * 401 in the binding's format; never a silent fall back to anonymous).
 */
export type GatewayIdentity =
  | {
      readonly caller: string;
      readonly tier?: string | undefined;
      /**
       * Request headers claiming an identity this request is not believed on (a trusted header
       * from outside its trusted sources): removed before the request is forwarded.
       */
      readonly unbelievedHeaders?: readonly string[] | undefined;
    }
  | { readonly unauthenticated: IdentityFailure };

/**
 * Identifies a request (its headers and socket; the body is not available). The identity
 * resolver of `identity:` in the gateway's config is one; the default keys a caller by its client
 * address (IPv6 by /64).
 */
export type IdentifyRequest = (req: IncomingMessage) => GatewayIdentity | Promise<GatewayIdentity>;

/** One refused request, for a log line. */
export interface GatewayRefusal {
  readonly caller: string;
  readonly method: string;
  readonly binding: 'jsonrpc' | 'rest' | 'grpc';
  /** HTTP status written (gRPC: 429 for RESOURCE_EXHAUSTED, 503 UNAVAILABLE, 401, 400). */
  readonly status: number;
  /** Policy name, `upstream`, or what was refused (`webhook`, `identity`). */
  readonly policy: string;
  readonly retryAfterMs?: number;
  /**
   * Why: the ErrorInfo reason of a rejection (`RATE_LIMIT_EXCEEDED`, `AGENT_OVERLOADED`,
   * `AGENT_UNAVAILABLE`, …), `UNAUTHENTICATED` or `WEBHOOK_REFUSED`.
   */
  readonly reason?: string;
  /** The request's tenant, when it named one (caller-chosen text). */
  readonly tenant?: string;
}

/**
 * One forwarded request's answer from the upstream (its headers) or failure, for metrics.
 * Requests the gateway answers itself are not forwarded and not reported.
 */
export interface UpstreamAnswer {
  readonly binding: 'jsonrpc' | 'rest';
  /** The A2A method forwarded. */
  readonly method: string;
  /** The upstream's HTTP status, or `error` when it was unreachable or did not answer in time. */
  readonly status: number | 'error';
  /** With `status: 'error'`: whether it did not answer in time, or could not be reached. */
  readonly error?: 'timeout' | 'unreachable';
  /** From forwarding the request to its answer's headers (or the failure), seconds. */
  readonly seconds: number;
}

/**
 * Options of `createGateway`.
 *
 * @example
 * ```ts
 * const options: GatewayOptions = { upstream: 'http://127.0.0.1:9000', limiter, publicUrl: 'https://agent.example' };
 * ```
 */
export interface GatewayOptions {
  /** The agent's base URL; its card is at `/.well-known/agent-card.json` below it. */
  readonly upstream: string | URL;
  /** Decides every request (its policies, store, domain, deduplication). */
  readonly limiter: Limiter;
  /**
   * The gateway's public base URL, onto which the card's interface URLs are rewritten (a function
   * when known only once listening).
   */
  readonly publicUrl: string | (() => string);
  /** Who a request is from. @defaultValue the client address (IPv6 by /64) */
  readonly identify?: IdentifyRequest;
  /** JSON-RPC rejections with HTTP 429 / 503 instead of 200. @defaultValue false */
  readonly mirrorHttpStatus?: boolean;
  /**
   * The push SSRF policy webhook URLs must pass (`createWebhookPolicy` of `a2a-ratelimit/push`),
   * or false to forward them unchecked. @defaultValue createWebhookPolicy() (public addresses only)
   */
  readonly webhookPolicy?: WebhookPolicy | false;
  /** Resolves webhook host names. @defaultValue dns.lookup */
  readonly resolveHost?: ResolveHost;
  /**
   * The upstream's gRPC target (`host:port`, or `http://` / `https://host:port`) when the card's
   * gRPC interface is not reachable as written. @defaultValue the card's GRPC interface URL
   */
  readonly upstreamGrpc?: string;
  /**
   * The gateway's public gRPC target (`host:port`), written into the card's GRPC interface; set it
   * when the gateway's `grpcHandler` is served (a function when known only once listening).
   * @defaultValue unset: the card's gRPC interface is served as the agent wrote it
   */
  readonly grpcPublicTarget?: string | (() => string);
  /**
   * Largest request body read, bytes (more is answered 413 in JSON); on gRPC the largest first
   * request message (more is RESOURCE_EXHAUSTED "message too large"). @defaultValue 1 MiB
   */
  readonly maxBodyBytes?: number;
  /**
   * How long a gRPC call's request message may take to arrive, ms; then the call is answered
   * DEADLINE_EXCEEDED (HTTP requests are bounded by the server's own `requestTimeout`).
   * @defaultValue 300,000 (as node's `requestTimeout`)
   */
  readonly grpcReadTimeoutMs?: number;
  /** Deepest JSON nesting accepted. @defaultValue 64 */
  readonly maxJsonDepth?: number;
  /** How long the upstream may take to answer with headers, ms. @defaultValue 30,000 */
  readonly upstreamTimeoutMs?: number;
  /** `Retry-After` of the 503 written when the upstream is unreachable, ms. @defaultValue 1,000 */
  readonly unavailableRetryAfterMs?: number;
  /** How often the upstream's card is refetched, ms. @defaultValue 60,000 */
  readonly cardRefreshMs?: number;
  /**
   * Following a task left running after its answer: GetTask polls of the upstream with the
   * admitting request's credentials, the first after `firstDelayMs`, each delay doubled up to
   * `maxDelayMs`, at most `maxPolls` (then the task's leases are freed). Only tasks holding a
   * concurrency lease are followed.
   * @defaultValue { firstDelayMs: 1000, maxDelayMs: 30000, maxPolls: 40 }
   */
  readonly taskPolling?: {
    readonly firstDelayMs?: number;
    readonly maxDelayMs?: number;
    readonly maxPolls?: number;
  };
  /** The connection pool to the upstream. @defaultValue an undici `Agent` with keep-alive */
  readonly dispatcher?: Dispatcher;
  /** Called once per refused request (for a log line). */
  readonly onRefusal?: (refusal: GatewayRefusal) => void;
  /**
   * Called once per forwarded request when the upstream's answer headers arrive or it fails
   * (for latency and status metrics; a request whose client left first is not reported).
   */
  readonly onUpstream?: (answer: UpstreamAnswer) => void;
  /** Where operational lines go (card fetch failures). @defaultValue stderr */
  readonly log?: (line: string) => void;
  /**
   * Usage charged from the agent's own reports (`usage-reports.ts`): the number at `path` (dotted,
   * e.g. `metadata.usage.totalTokens`) of a task's final Task or status update (or of a Message
   * answer) is charged to the limiter's usage policies (`unit`) for the caller whose admission
   * started the run; the first report settles the admission's reservation, a run that never
   * reports keeps it (its `estimate`). Tasks of such admissions left running are followed (GetTask
   * polls, `taskPolling`) for their report. `onIgnoredReport` is told each report that is not a
   * finite number ≥ 0 (ignored). @defaultValue off
   */
  readonly usage?: {
    readonly path: string | (() => string);
    readonly onIgnoredReport?: (report: IgnoredUsageReport) => void;
  };
}

/** Defaults of {@link GatewayOptions}. */
export const GATEWAY_DEFAULTS = Object.freeze({
  maxBodyBytes: 1_048_576,
  maxJsonDepth: 64,
  upstreamTimeoutMs: 30_000,
  grpcReadTimeoutMs: 300_000,
  unavailableRetryAfterMs: 1_000,
  cardRefreshMs: 60_000,
  cardRetryMs: 1_000,
  maxCardBytes: 1_048_576,
  /** Largest JSON answer read for task states (larger ones pass through unread). */
  maxObservedAnswerBytes: 4_194_304,
  taskPolling: Object.freeze({ firstDelayMs: 1_000, maxDelayMs: 30_000, maxPolls: 40 }),
});
