/**
 * @module push-webhook.helpers
 * A real webhook for the push sender's tests: a node:http server on 127.0.0.1 (port 0) that
 * records every POST (virtual arrival time, headers, the StreamResponse it carried) and answers
 * through a test-supplied function — our own limiter (a `MemoryStore` decision encoded with
 * `encodeRestRejection`), a gateway page, or nothing at all. Plus the plumbing to run real I/O
 * under virtual time: a counting transport and a driver that moves the virtual clock only while no
 * request is on the wire, so the webhook and the sender read the same time for one exchange.
 */

import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServerCallContext, type StoredPushNotificationConfig } from '@a2a-js/sdk/server';
import type { Clock, RatePolicy } from 'a2a-ratelimit';
import { encodeRestRejection, MemoryStore, rateLimitHeaders } from 'a2a-ratelimit';
import { createWebhookTransport, type WebhookTransport } from 'a2a-ratelimit/push';
import type { VirtualClock } from 'a2a-ratelimit/simulation';

/** One POST that reached the webhook. */
export interface WebhookArrival {
  readonly atMs: number;
  readonly headers: IncomingHttpHeaders;
  readonly bodyText: string;
  /** The StreamResponse JSON, when the body parsed. */
  readonly body: Record<string, unknown> | undefined;
  readonly taskId: string;
  /** `statusUpdate` / `task` / `artifactUpdate` / `message`. */
  readonly kind: string;
  /** Task state name (`TASK_STATE_WORKING`…) of snapshots and status updates. */
  readonly state: string | undefined;
  /** Status message id of a status update (our tests number them), else the artifact id. */
  readonly messageId: string;
  /** Status the webhook answered. */
  status: number;
  /** For a refusal: the earliest time the webhook told the sender to come back, ms. */
  notBeforeMs?: number;
}

/** The webhook's answer; `notBeforeMs` is what its delay headers / body mean, for assertions. */
export interface WebhookAnswer {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly notBeforeMs?: number;
  /** Never answer (the socket stays open until the client gives up). */
  readonly hang?: boolean;
}

/** Decides the answer to one arrival (`undefined`: 200 OK). */
export type WebhookResponder = (arrival: WebhookArrival) => WebhookAnswer | undefined;

/** A running webhook. */
export interface Webhook {
  readonly url: string;
  readonly arrivals: WebhookArrival[];
  /** Stops listening (connections refused) until `up()`. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a webhook on 127.0.0.1 whose clock is `clock` (the sender's virtual clock). */
export async function startWebhook(options: {
  clock: Clock;
  respond?: WebhookResponder;
}): Promise<Webhook> {
  const arrivals: WebhookArrival[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const bodyText = Buffer.concat(chunks).toString('utf8');
      const arrival = arrivalOf(options.clock.nowMs(), req.headers, bodyText);
      arrivals.push(arrival);
      const answer = options.respond?.(arrival);
      if (answer?.hang === true) return;
      arrival.status = answer?.status ?? 200;
      if (answer?.notBeforeMs !== undefined) arrival.notBeforeMs = answer.notBeforeMs;
      res.writeHead(arrival.status, answer?.headers ?? { 'content-type': 'application/json' });
      res.end(answer?.body ?? '{}');
    });
  });
  const listen = (port: number) =>
    new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrivals,
    down: stop,
    up: () => listen(port),
    close: () => (server.listening ? stop() : Promise.resolve()),
  };
}

function arrivalOf(atMs: number, headers: IncomingHttpHeaders, bodyText: string): WebhookArrival {
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(bodyText) as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  const [kind, value] = Object.entries(body ?? {})[0] ?? ['', undefined];
  const v = (value ?? {}) as {
    id?: string;
    taskId?: string;
    status?: { state?: string; message?: { messageId?: string } };
    artifact?: { artifactId?: string };
  };
  return {
    atMs,
    headers,
    bodyText,
    body,
    taskId: kind === 'task' ? (v.id ?? '') : (v.taskId ?? ''),
    kind,
    state: v.status?.state,
    messageId: v.status?.message?.messageId ?? v.artifact?.artifactId ?? '',
    status: 0,
  };
}

/**
 * A webhook limited by our own limiter: `limit` POSTs per `windowSeconds` with `burst`, one
 * bucket per caller (the `Authorization` header), slots held per notification (its message id),
 * rejections encoded by `encodeRestRejection` (429, RetryInfo, `Retry-After`, `RateLimit`), and
 * `RateLimit` headers on every 200 unless `announceOnSuccess` is false (most webhooks say
 * nothing until they refuse).
 */
export function limitedResponder(
  clock: Clock,
  rate: { limit: number; windowSeconds: number; burst: number },
  options: { announceOnSuccess?: boolean } = {},
): WebhookResponder {
  const policy: RatePolicy = {
    name: 'webhook',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage'],
    ...rate,
  };
  const store = new MemoryStore({ policies: [policy], clock });
  return (arrival) => {
    const decision = store.decideSync({
      caller: String(arrival.headers.authorization ?? 'anonymous'),
      method: 'SendMessage',
      messageId: `${arrival.taskId}/${arrival.messageId}`,
    });
    if (decision.admitted) {
      return {
        status: 200,
        headers: {
          'content-type': 'application/json',
          ...(options.announceOnSuccess === false ? {} : rateLimitHeaders(decision.limits)),
        },
        body: '{}',
      };
    }
    const wire = encodeRestRejection(decision.rejection, {
      domain: 'hooks.example.com',
      limits: decision.limits,
    });
    return {
      ...wire,
      notBeforeMs: arrival.atMs + Number(wire.headers['retry-after']) * 1000,
    };
  };
}

/**
 * Counts POSTs on the wire around a real transport (default: the sender's own SSRF-safe
 * transport with `allowPrivateNetworks`, as loopback webhooks need); a POST resolves once its
 * answer has been read whole.
 */
export function countingTransport(
  inner: WebhookTransport = createWebhookTransport({ policy: { allowPrivateNetworks: true } }),
): { transport: WebhookTransport; readonly inFlight: () => number } {
  let inFlight = 0;
  return {
    transport: {
      async post(post) {
        inFlight++;
        try {
          return await inner.post(post);
        } finally {
          inFlight--;
        }
      },
      close: () => inner.close(),
    },
    inFlight: () => inFlight,
  };
}

/**
 * Runs virtual time until `done()`: real I/O first (time stands still while a request is on the
 * wire), then `stepMs` of virtual time. Throws past `maxVirtualMs`.
 */
export async function driveUntil(
  vt: VirtualClock,
  inFlight: () => number,
  done: () => boolean,
  options: { stepMs?: number; maxVirtualMs?: number; onTick?: () => Promise<void> | void } = {},
): Promise<void> {
  const stepMs = options.stepMs ?? 10;
  const endMs = vt.nowMs() + (options.maxVirtualMs ?? 600_000);
  while (!done()) {
    if (vt.nowMs() > endMs)
      throw new Error(`driveUntil: not done after ${options.maxVirtualMs} ms`);
    if (inFlight() > 0) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      continue;
    }
    await options.onTick?.();
    await vt.advance(stepMs);
  }
}

/** A push config for the SDK's `InMemoryPushNotificationStore`. */
export function pushConfig(
  taskId: string,
  url: string,
  auth: { scheme: string; credentials: string } | { token: string },
): StoredPushNotificationConfig['config'] {
  return {
    tenant: '',
    id: '',
    taskId,
    url,
    token: 'token' in auth ? auth.token : '',
    authentication: 'token' in auth ? undefined : auth,
  };
}

/** The server-call context the SDK gives a sender (no user, protocol 1.0). */
export function callContext(): ServerCallContext {
  return new ServerCallContext({ requestedVersion: '1.0' });
}
