/**
 * @module webhook-transport
 * `createWebhookTransport`: the SSRF-safe POST to a webhook, pinned to the checked address.
 */

import { lookup } from 'node:dns/promises';
import {
  type ClientRequestArgs,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';
import { BrandedError, isBrandedError } from '../core/branded-error.js';
import { parseIpAddress } from '../wire/ip-address.js';
import {
  type AllowedAddress,
  createWebhookPolicy,
  noAddressRefusal,
  type WebhookPolicy,
  type WebhookPolicyOptions,
  type WebhookRefusal,
} from './webhook-policy.js';

/**
 * One address a host name resolved to.
 */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/**
 * Resolves a host name to its addresses. @defaultValue `dns.lookup(hostname, { all: true,
 * verbatim: true })`
 */
export type WebhookResolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/**
 * Where one new connection goes: the checked address, and the names it is for.
 *
 * @example
 * ```ts
 * const t: WebhookConnectTarget = { protocol: 'https:', hostname: 'hooks.example.com', servername: 'hooks.example.com',
 *   address: '93.184.215.14', family: 4, port: 443, by: 'public' };
 * ```
 */
export interface WebhookConnectTarget {
  readonly protocol: 'http:' | 'https:';
  /** The URL's host (no brackets). */
  readonly hostname: string;
  /** TLS server name (SNI and certificate check): the host name; absent for an IP address. */
  readonly servername?: string;
  /** The checked address to connect to. */
  readonly address: string;
  readonly family: 4 | 6;
  readonly port: number;
  /** What allowed it. */
  readonly by: AllowedAddress['by'];
}

/**
 * Opens one connection to `target.address` (plain TCP for `http:`, TLS for `https:`) and returns
 * the stream. @defaultValue `net.connect` / `tls.connect` to the address, TLS checked against
 * `servername` (or the address)
 */
export type WebhookConnector = (target: WebhookConnectTarget) => Duplex;

/**
 * One POST.
 */
export interface WebhookPost {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly signal: AbortSignal;
}

/**
 * What the webhook answered.
 */
export interface WebhookAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body, up to `maxResponseBytes` (UTF-8). */
  readonly body: string;
  /** The checked address the connection went to. */
  readonly address: string | undefined;
}

/**
 * Sends POSTs. `close()` ends pooled connections.
 *
 * @example
 * ```ts
 * const transport: WebhookTransport = createWebhookTransport({ policy: { allow: ['10.8.0.0/16'] } });
 * const answer = await transport.post({ url, headers, body, signal: AbortSignal.timeout(10_000) });
 * ```
 */
export interface WebhookTransport {
  post(post: WebhookPost): Promise<WebhookAnswer>;
  close(): void;
}

/**
 * Options of {@link createWebhookTransport}.
 */
export interface WebhookTransportOptions {
  /** Where POSTs may go (a compiled policy or its options). @defaultValue deny every non-public address */
  readonly policy?: WebhookPolicy | WebhookPolicyOptions;
  /** Name resolution. @defaultValue `dns.lookup`, all addresses, in the resolver's order */
  readonly resolve?: WebhookResolver;
  /**
   * Opens connections to checked addresses (the package's tests dial a loopback stand-in).
   *
   * @internal
   * @defaultValue `net.connect` / `tls.connect`
   */
  readonly connect?: WebhookConnector;
  /** Extra options of the default TLS connector (`ca`, `minVersion`…). */
  readonly tls?: Omit<ConnectionOptions, 'host' | 'port' | 'servername' | 'socket' | 'path'>;
  /** Largest response body read, bytes; the rest is discarded. @defaultValue 65_536 */
  readonly maxResponseBytes?: number;
  /** Reuse connections. @defaultValue true */
  readonly keepAlive?: boolean;
  /** Idle pooled connections are closed after this long, ms. @defaultValue 15_000 */
  readonly idleTimeoutMs?: number;
}

/**
 * Stable `code` strings of the webhook transport's errors.
 *
 * @example
 * ```ts
 * if (e.code === WEBHOOK_TRANSPORT_ERROR_CODES.refused) drop('refused');
 * ```
 */
export const WEBHOOK_TRANSPORT_ERROR_CODES = { refused: 'ERR_A2A_WEBHOOK_REFUSED' } as const;

/**
 * A refusal by the webhook policy: nothing was connected to.
 *
 * @example
 * ```ts
 * try { await transport.post(post); } catch (e) { if (isWebhookRefusedError(e)) log(e.refusal.reason); }
 * ```
 */
export class WebhookRefusedError extends BrandedError<
  typeof WEBHOOK_TRANSPORT_ERROR_CODES.refused
> {
  declare readonly name: 'WebhookRefusedError';
  /** Brand checked by {@link isWebhookRefusedError}. */
  declare readonly isWebhookRefusedError: true;
  readonly refusal: WebhookRefusal;
  readonly url: string;

  constructor(url: string, refusal: WebhookRefusal) {
    super(
      'WebhookRefusedError',
      WEBHOOK_TRANSPORT_ERROR_CODES.refused,
      `webhook refused: ${refusal.message}`,
    );
    this.refusal = refusal;
    this.url = url;
  }
}

/**
 * Whether `error` is a {@link WebhookRefusedError} (of any installed copy of this package: it
 * checks the brand).
 *
 * @example
 * ```ts
 * if (isWebhookRefusedError(error)) drop('refused');
 * ```
 */
export function isWebhookRefusedError(error: unknown): error is WebhookRefusedError {
  return isBrandedError(error, 'WebhookRefusedError');
}

/**
 * The policy from {@link WebhookTransportOptions.policy}: compiled as is, or from options.
 *
 * @example
 * ```ts
 * const policy = toWebhookPolicy({ allowPrivateNetworks: true });
 * ```
 */
export function toWebhookPolicy(
  policy: WebhookPolicy | WebhookPolicyOptions | undefined,
): WebhookPolicy {
  if (policy !== undefined && 'checkUrl' in policy) return policy;
  return createWebhookPolicy(policy ?? {});
}

/**
 * The system resolver: `dns.lookup(hostname, { all: true, verbatim: true })` (what `net.connect`
 * would use: `/etc/hosts`, then DNS).
 *
 * @example
 * ```ts
 * await systemWebhookResolver('localhost'); // [{ address: '127.0.0.1', family: 4 }, …]
 * ```
 */
export const systemWebhookResolver: WebhookResolver = (hostname) =>
  lookup(hostname, { all: true, verbatim: true });

/** Opens connections for the agents: resolve, check every address, connect to the checked one. */
class ConnectionGuard {
  /** The target each socket was opened for. */
  readonly targets = new WeakMap<object, WebhookConnectTarget>();

  constructor(
    private readonly policy: WebhookPolicy,
    private readonly resolve: WebhookResolver,
    private readonly connect: WebhookConnector,
  ) {}

  open(
    protocol: 'http:' | 'https:',
    options: ClientRequestArgs,
    callback: (error: Error | null, stream: Duplex) => void,
  ): void {
    this.target(protocol, options).then(
      (target) => {
        let socket: Duplex;
        try {
          socket = this.connect(target);
        } catch (error) {
          callback(error as Error, undefined as unknown as Duplex);
          return;
        }
        this.targets.set(socket, target);
        callback(null, socket);
      },
      (error: Error) => callback(error, undefined as unknown as Duplex),
    );
  }

  private async target(
    protocol: 'http:' | 'https:',
    options: ClientRequestArgs,
  ): Promise<WebhookConnectTarget> {
    const hostname = String(options.hostname ?? options.host ?? '').replace(/^\[(.*)\]$/, '$1');
    const port = Number(options.port) || (protocol === 'https:' ? 443 : 80);
    const shown = hostname.includes(':') ? `[${hostname}]` : hostname;
    const url = `${protocol}//${shown}:${port}/`;
    const check = this.policy.checkUrl(url);
    if (!check.allowed) throw new WebhookRefusedError(url, check);
    let chosen: AllowedAddress;
    if (check.literal !== undefined) {
      chosen = check.literal;
    } else {
      const addresses = await this.resolve(hostname);
      if (addresses.length === 0) throw new WebhookRefusedError(url, noAddressRefusal(hostname));
      const verdicts = addresses.map((a) => this.policy.checkAddress(hostname, a.address));
      const refused = verdicts.find((v): v is WebhookRefusal => !v.allowed);
      if (refused !== undefined) throw new WebhookRefusedError(url, refused);
      const allowed = verdicts as AllowedAddress[];
      chosen = allowed.find((v) => v.family === 4) ?? (allowed[0] as AllowedAddress);
    }
    return {
      protocol,
      hostname,
      ...(parseIpAddress(hostname) === undefined ? { servername: hostname } : {}),
      address: chosen.address,
      family: chosen.family,
      port,
      by: chosen.by,
    };
  }
}

/**
 * Creates the SSRF-safe transport the push sender uses: only http(s), the policy checked on the
 * URL and on every resolved address, connections pinned to the checked address, redirects not
 * followed, bounded response bodies. Every new connection is opened here and no second lookup
 * happens anywhere, so there is no window for DNS rebinding: the address checked is the address
 * connected to, and a pooled connection is only ever one that was checked when it was opened.
 *
 * @example
 * ```ts
 * const transport = createWebhookTransport({ policy: { allow: ['hooks.corp.example'] } });
 * const sender = new RateLimitedPushSender(pushStore, { transport });
 * ```
 */
export function createWebhookTransport(options: WebhookTransportOptions = {}): WebhookTransport {
  const policy = toWebhookPolicy(options.policy);
  const tlsOptions = options.tls ?? {};
  const connect: WebhookConnector =
    options.connect ??
    ((t) =>
      t.protocol === 'https:'
        ? tlsConnect({
            ALPNProtocols: ['http/1.1'],
            ...tlsOptions,
            host: t.address,
            port: t.port,
            ...(t.servername === undefined ? {} : { servername: t.servername }),
          })
        : netConnect({ host: t.address, port: t.port }));
  const guard = new ConnectionGuard(policy, options.resolve ?? systemWebhookResolver, connect);
  const maxResponseBytes = Math.max(0, Math.floor(options.maxResponseBytes ?? 65_536));
  const agentOptions = {
    keepAlive: options.keepAlive ?? true,
    timeout: options.idleTimeoutMs ?? 15_000,
  };
  const httpAgent = new (class extends HttpAgent {
    override createConnection(
      opts: ClientRequestArgs,
      callback?: (error: Error | null, stream: Duplex) => void,
    ): Duplex | null | undefined {
      guard.open('http:', opts, callback ?? (() => {}));
      return undefined;
    }
  })(agentOptions);
  const httpsAgent = new (class extends HttpsAgent {
    override createConnection(
      opts: ClientRequestArgs,
      callback?: (error: Error | null, stream: Duplex) => void,
    ): Duplex | null | undefined {
      guard.open('https:', opts, callback ?? (() => {}));
      return undefined;
    }
  })(agentOptions);

  const post = (p: WebhookPost): Promise<WebhookAnswer> =>
    new Promise<WebhookAnswer>((resolve, reject) => {
      const check = policy.checkUrl(p.url);
      if (!check.allowed) {
        reject(new WebhookRefusedError(p.url, check));
        return;
      }
      const { url } = check;
      const secure = url.protocol === 'https:';
      const body = Buffer.from(p.body, 'utf8');
      const request = (secure ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        headers: { ...p.headers, 'content-length': String(body.length) },
        agent: secure ? httpsAgent : httpAgent,
        signal: p.signal,
      });
      request.once('error', reject);
      request.once('response', (response) => {
        const address = guard.targets.get(request.socket as object)?.address;
        const chunks: Buffer[] = [];
        let kept = 0;
        let overflow = false;
        response.on('data', (chunk: Buffer) => {
          if (overflow) return;
          const room = maxResponseBytes - kept;
          if (chunk.length > room) {
            if (room > 0) chunks.push(chunk.subarray(0, room));
            kept = maxResponseBytes;
            overflow = true;
            response.destroy(); // do not read (or keep the connection for) the rest
            finish();
            return;
          }
          chunks.push(chunk);
          kept += chunk.length;
        });
        const finish = (): void =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            address,
          });
        response.once('end', finish);
        response.once('error', (error) => (overflow ? undefined : reject(error)));
        response.once('close', () => {
          if (!response.complete && !overflow)
            reject(new Error('webhook closed the response early'));
        });
      });
      request.end(body);
    });

  return {
    post,
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
