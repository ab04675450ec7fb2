/**
 * @module webhook-rate-limit
 * `pushWebhookRateLimit`: the webhook side's middleware, rate-limiting notifications per sending
 * agent.
 */

import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../core/clock.js';
import type { RatePolicy } from '../core/policy.js';
import { createLimiter } from '../server/limiter.js';
import type { Limiter } from '../server/limiter-api.js';

/**
 * What the sender presented: the `Authorization` header split into scheme and credentials, or
 * the legacy notification token.
 */
export type SenderCredential =
  | { readonly kind: 'authorization'; readonly scheme: string; readonly credentials: string }
  | { readonly kind: 'token'; readonly token: string };

/**
 * Maps a credential to the sending agent it was given to (your record of which token or
 * credentials you registered with which agent, or the verified issuer of a signed token), or
 * `undefined` when it is not one of yours.
 *
 * @example
 * ```ts
 * const tokens = new Map([['tok-a', 'research-agent'], ['tok-b', 'billing-agent']]);
 * const identifySender: IdentifySender = (c) => tokens.get(c.kind === 'token' ? c.token : c.credentials);
 * ```
 */
export type IdentifySender = (
  credential: SenderCredential,
  req: IncomingMessage,
) => string | undefined | Promise<string | undefined>;

/**
 * Options of {@link pushWebhookRateLimit}.
 *
 * @example
 * ```ts
 * const options: PushWebhookRateLimitOptions = {
 *   identifySender: (c) => tokens.get(c.kind === 'token' ? c.token : c.credentials),
 *   rate: { limit: 5, windowSeconds: 1, burst: 5 }, domain: 'client.example.com',
 * };
 * ```
 */
export interface PushWebhookRateLimitOptions {
  /** Who sent it, from its credential only (required). */
  readonly identifySender: IdentifySender;
  /**
   * Notifications per sending agent: `limit` per `windowSeconds`, bursts of `burst` (default
   * `limit`); the policy's wire name is `name` (default `push-per-agent`). Give this or `limiter`.
   */
  readonly rate?: {
    readonly limit: number;
    readonly windowSeconds: number;
    readonly burst?: number;
    readonly name?: string;
  };
  /**
   * A limiter of your own (e.g. over a `RedisStore` shared by replicas): its policies must apply
   * to `SendMessage` with the `caller` scope (the sender); create it with `dedup: false`.
   */
  readonly limiter?: Limiter;
  /** ErrorInfo domain of the 429 (yours), for the limiter built from `rate`. Required with `rate`. */
  readonly domain?: string;
  /** Time source of the limiter built from `rate`. @defaultValue Date.now */
  readonly clock?: Clock;
  /** Header of the legacy token. @defaultValue 'X-A2A-Notification-Token' */
  readonly tokenHeaderName?: string;
  /** Largest body read, bytes (413 above). @defaultValue 1_048_576 */
  readonly maxBodyBytes?: number;
}

/**
 * The middleware, with its limiter and a `close()` for the one it built.
 *
 * @example
 * ```ts
 * const guard = pushWebhookRateLimit({ identifySender, rate: { limit: 5, windowSeconds: 1 }, domain: 'client.example.com' });
 * app.post('/a2a/webhook', guard, (req, res) => { handle(req.body); res.sendStatus(204); });
 * ```
 */
export interface PushWebhookRateLimit {
  (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void;
  readonly limiter: Limiter;
  close(): Promise<void>;
}

const DEFAULT_POLICY_NAME = 'push-per-agent';
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json(?:\s*;.*)?$/i;

/**
 * The rate policy `pushWebhookRateLimit` builds from `rate`: scope `caller` (the sending agent),
 * method `SendMessage` (each notification), so holds apply.
 *
 * @example
 * ```ts
 * const store = new RedisStore({ client: redis, onError: 'insurance', policies: [pushWebhookPolicy({ limit: 5, windowSeconds: 1 })] });
 * createLimiter({ store, domain, dedup: false });
 * ```
 */
export function pushWebhookPolicy(
  rate: NonNullable<PushWebhookRateLimitOptions['rate']>,
): RatePolicy {
  return {
    name: rate.name ?? DEFAULT_POLICY_NAME,
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage'],
    limit: rate.limit,
    windowSeconds: rate.windowSeconds,
    ...(rate.burst === undefined ? {} : { burst: rate.burst }),
  };
}

/**
 * Builds the receiver middleware (Express, or plain `node:http`). The sending agent is learnt only
 * from what the client handed it when registering the webhook — the config's `authentication`
 * (`Authorization`) or its `token` (`X-A2A-Notification-Token`), mapped by `identifySender`;
 * nothing else in the request is trusted, and an unknown or missing credential gets 401 before
 * anything is counted. Over its limit a notification gets this library's REST rejection (429,
 * `Retry-After`, `RateLimit`, google.rpc body). Each notification is one `SendMessage` whose
 * messageId is a hash of the body, so one re-sent unchanged after its delay claims its held slot.
 * Throws a `TypeError` without `identifySender` or without one
 * of `rate` / `limiter`, and the limiter's `PolicyError` / `RangeError` for a bad `rate` or
 * `domain`.
 *
 * @example
 * ```ts
 * const tokens = new Map([['tok-a', 'research-agent']]);
 * app.post('/a2a/webhook',
 *   pushWebhookRateLimit({
 *     identifySender: (c) => tokens.get(c.kind === 'token' ? c.token : c.credentials),
 *     rate: { limit: 5, windowSeconds: 1, burst: 5 },
 *     domain: 'client.example.com',
 *   }),
 *   (req, res) => { onNotification(req.body); res.sendStatus(200); });
 * ```
 */
export function pushWebhookRateLimit(options: PushWebhookRateLimitOptions): PushWebhookRateLimit {
  if (typeof options.identifySender !== 'function') {
    throw new TypeError('pushWebhookRateLimit: pass identifySender (credential → sending agent)');
  }
  const ownLimiter = options.limiter === undefined;
  let limiter: Limiter;
  if (options.limiter !== undefined) limiter = options.limiter;
  else {
    if (options.rate === undefined) {
      throw new TypeError('pushWebhookRateLimit: pass rate ({ limit, windowSeconds }) or limiter');
    }
    limiter = createLimiter({
      policies: [pushWebhookPolicy(options.rate)],
      ...(options.domain === undefined ? {} : { domain: options.domain }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      dedup: false,
      eventLoopDelay: false,
    });
  }
  const tokenHeader = (options.tokenHeaderName ?? 'X-A2A-Notification-Token').toLowerCase();
  const maxBodyBytes = Math.max(0, Math.floor(options.maxBodyBytes ?? 1_048_576));

  const handle = async (
    req: IncomingMessage & { body?: unknown },
    res: ServerResponse,
  ): Promise<boolean> => {
    const credential = credentialOf(req, tokenHeader);
    const sender =
      credential === undefined ? undefined : await options.identifySender(credential, req);
    if (sender === undefined || sender === '') {
      answer(res, 401, 'UNAUTHENTICATED', 'push notification from an unknown sender');
      return false;
    }
    const fingerprint = await bodyFingerprint(req, maxBodyBytes);
    if (typeof fingerprint === 'number') {
      answer(
        res,
        fingerprint,
        fingerprint === 413 ? 'RESOURCE_EXHAUSTED' : 'INVALID_ARGUMENT',
        fingerprint === 413 ? `body larger than ${maxBodyBytes} bytes` : 'body is not JSON',
      );
      return false;
    }
    const outcome = await limiter.admit({
      caller: sender,
      method: 'SendMessage',
      messageId: fingerprint,
      binding: 'rest',
    });
    if (outcome.status === 'rejected') {
      const wire = limiter.encodeRest(outcome.rejection, outcome.limits);
      res.writeHead(wire.status, wire.headers);
      res.end(wire.body);
      return false;
    }
    if (outcome.status === 'admitted') {
      const { ticket } = outcome;
      for (const [name, value] of Object.entries(ticket.headers)) res.setHeader(name, value);
      if (ticket.needsEnd) res.once('close', () => ticket.end());
    }
    return true; // admitted, or a copy a deduplicating limiter already admitted
  };

  const middleware = ((req, res, next) => {
    handle(req, res).then(
      (go) => (go ? next() : undefined),
      (error: unknown) => next(error),
    );
  }) as PushWebhookRateLimit;
  Object.defineProperty(middleware, 'limiter', { value: limiter, enumerable: true });
  Object.defineProperty(middleware, 'close', {
    value: () => (ownLimiter ? limiter.close() : Promise.resolve()),
    enumerable: true,
  });
  return middleware;
}

function credentialOf(req: IncomingMessage, tokenHeader: string): SenderCredential | undefined {
  const authorization = req.headers.authorization?.trim();
  if (authorization) {
    const space = authorization.indexOf(' ');
    if (space > 0) {
      const credentials = authorization.slice(space + 1).trim();
      if (credentials !== '') {
        return { kind: 'authorization', scheme: authorization.slice(0, space), credentials };
      }
    }
  }
  const token = req.headers[tokenHeader];
  const value = Array.isArray(token) ? token[0] : token;
  return value ? { kind: 'token', token: value } : undefined;
}

/**
 * A short hash of the body: of the raw bytes when this middleware reads them (it then leaves the
 * body in `req.body`, parsed when JSON, as `express.json()` would), else of `req.body` as an
 * earlier parser left it. A number is the HTTP status to refuse with.
 */
async function bodyFingerprint(
  req: IncomingMessage & { body?: unknown; _body?: boolean },
  maxBodyBytes: number,
): Promise<string | number> {
  if (req.body !== undefined || req.readableEnded) {
    const body = req.body;
    const bytes =
      typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body ?? null);
    return hash(bytes);
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBodyBytes) return 413;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) return 413;
    chunks.push(chunk);
  }
  const raw = Buffer.concat(chunks);
  const type = req.headers['content-type'] ?? '';
  if (JSON_TYPE.test(type)) {
    try {
      req.body = JSON.parse(raw.toString('utf8')) as unknown;
    } catch {
      return 400;
    }
  } else req.body = raw;
  req._body = true; // Express 4's body parser skips a request marked parsed
  return hash(raw);
}

function hash(bytes: string | Buffer): string {
  return createHash('sha256').update(bytes).digest('base64url').slice(0, 22);
}

function answer(res: ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code: status, status: code, message } });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
