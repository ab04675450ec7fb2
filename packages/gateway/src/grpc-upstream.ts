/**
 * @module grpc-upstream
 * The gateway's HTTP/2 connection to the upstream's gRPC server, a relayed call's headers, and its
 * own unary GetTask.
 */

import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  constants,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import { GrpcFrameReader, grpcFrame, READABLE_ENCODINGS } from './grpc-frames.js';
import { forwardedTo } from './upstream-client.js';

/**
 * The origin to dial for a card's gRPC interface URL or a `--upstream-grpc` target: `host:port`,
 * `grpc://host:port`, `dns:///host:port` and `http://host:port` are h2c; `https://` and
 * `grpcs://` are TLS. Undefined when it is none of these.
 *
 * @example
 * ```ts
 * grpcOriginOf('127.0.0.1:50051'); // 'http://127.0.0.1:50051'
 * ```
 */
export function grpcOriginOf(target: string): string | undefined {
  const t = target.trim();
  const tls = /^(https|grpcs):\/\//i.test(t);
  const rest = t.replace(/^(https?|grpcs?):\/\//i, '').replace(/^dns:\/\/[^/]*\//i, '');
  const authority = rest.split('/')[0] ?? '';
  if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):\d{1,5}$/i.test(authority)) return undefined;
  return `${tls ? 'https' : 'http'}://${authority}`;
}

/**
 * Request headers never forwarded (hop-by-hop, or the gateway's own to set). The gateway sends
 * its request messages uncompressed: the caller's `grpc-encoding` described its own frames.
 */
const DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'grpc-timeout',
  'grpc-encoding',
  'grpc-accept-encoding',
]);

/**
 * The caller's headers for the upstream: pseudo-headers, hop-by-hop fields and `grpc-encoding`
 * (the message goes uncompressed) dropped, `grpc-accept-encoding` kept to the codings the gateway
 * reads, everything else (credentials, `te`, `content-type`,
 * metadata) unchanged, the deadline left (`grpc-timeout`, ms) when there is one, the client
 * address appended to `x-forwarded-for` and `forwarded`.
 *
 * @example
 * ```ts
 * forwardGrpcHeaders(headers, 2500)['grpc-timeout']; // '2500m'
 * ```
 */
export function forwardGrpcHeaders(
  headers: IncomingHttpHeaders,
  remainingMs: number | undefined,
  clientAddress?: string | undefined,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') || DROPPED.has(name) || value === undefined) continue;
    out[name] = value;
  }
  if (remainingMs !== undefined) out['grpc-timeout'] = grpcTimeoutValue(remainingMs);
  // Answers are read for task states and usage reports: the agent may compress them only in a
  // coding the gateway reads (and the caller asked for).
  const accepted = String(headers['grpc-accept-encoding'] ?? '')
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => READABLE_ENCODINGS.has(coding));
  if (accepted.length > 0) out['grpc-accept-encoding'] = accepted.join(',');
  if (clientAddress !== undefined) Object.assign(out, forwardedTo(headers, clientAddress));
  return out;
}

/**
 * A time left as a `grpc-timeout` value: ms while it fits the spec's 8 digits, else seconds.
 *
 * @example
 * ```ts
 * grpcTimeoutValue(2500); // '2500m'
 * ```
 */
export function grpcTimeoutValue(remainingMs: number): string {
  const ms = Math.max(1, Math.ceil(remainingMs));
  return ms <= 99_999_999 ? `${ms}m` : `${Math.ceil(ms / 1000)}S`;
}

/** The longest delay a Node timer keeps (longer ones fire at once), ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const TIMEOUT_UNITS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/**
 * A `grpc-timeout` header in ms (at most 8 digits and a unit, per the gRPC spec); undefined when
 * absent or malformed, or longer than a timer can keep (~24.8 days: taken as no deadline).
 *
 * @example
 * ```ts
 * grpcTimeoutMs('3S'); // 3000
 * ```
 */
export function grpcTimeoutMs(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (match === null) return undefined;
  const ms = Number(match[1]) * (TIMEOUT_UNITS[match[2] as string] as number);
  return ms > MAX_TIMER_MS ? undefined : ms;
}

/** One HTTP/2 session to the upstream, reopened after it closes. */
export class GrpcUpstream {
  private session: ClientHttp2Session | undefined;
  private closed = false;

  constructor(private readonly origin: () => string | undefined) {}

  /** The origin calls go to, or undefined when the upstream serves no gRPC interface. */
  get target(): string | undefined {
    return this.origin();
  }

  /** Opens a stream for a call; throws when there is no gRPC upstream. */
  request(headers: OutgoingHttpHeaders, path: string): ClientHttp2Stream {
    const session = this.sessionFor();
    return session.request({
      ...headers,
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: path,
    });
  }

  /** Closes the session. */
  close(): void {
    this.closed = true;
    this.session?.destroy();
    this.session = undefined;
  }

  private sessionFor(): ClientHttp2Session {
    const origin = this.origin();
    if (origin === undefined || this.closed) throw new Error('no gRPC interface upstream');
    const open = this.session;
    if (open !== undefined && !open.closed && !open.destroyed) {
      if ((open as { gatewayOrigin?: string }).gatewayOrigin === origin) return open;
      open.close();
    }
    const session = connect(origin);
    (session as { gatewayOrigin?: string }).gatewayOrigin = origin;
    // Errors surface on each stream; a session that failed is replaced on next use.
    session.on('error', () => undefined);
    session.on('close', () => {
      if (this.session === session) this.session = undefined;
    });
    session.on('goaway', () => {
      if (this.session === session) this.session = undefined;
    });
    session.unref();
    this.session = session;
    return session;
  }
}

/** What a unary call the gateway made itself returned. */
export interface UnaryResult {
  /** The gRPC status (trailers, or Trailers-Only headers); 14 when it never answered. */
  readonly code: number;
  readonly message: Buffer | undefined;
}

/**
 * Makes one unary call (uncompressed) on the upstream with `headers` and waits for its status, at
 * most `timeoutMs`.
 *
 * @example
 * ```ts
 * const { code, message } = await unaryCall(upstream, '/lf.a2a.v1.A2AService/GetTask', headers, bytes, 5000);
 * ```
 */
export function unaryCall(
  upstream: GrpcUpstream,
  path: string,
  headers: OutgoingHttpHeaders,
  message: Uint8Array,
  timeoutMs: number,
): Promise<UnaryResult> {
  return new Promise((resolve) => {
    let stream: ClientHttp2Stream;
    try {
      stream = upstream.request(
        {
          ...headers,
          'content-type': 'application/grpc',
          te: 'trailers',
          'grpc-timeout': grpcTimeoutValue(timeoutMs),
        },
        path,
      );
    } catch {
      resolve({ code: 14, message: undefined });
      return;
    }
    const reader = new GrpcFrameReader(16 * 1024 * 1024);
    let answer: Buffer | undefined;
    let code: number | undefined;
    const timer = setTimeout(() => stream.close(constants.NGHTTP2_CANCEL), timeoutMs);
    const codeOf = (h: IncomingHttpHeaders): void => {
      const value = h['grpc-status'];
      if (typeof value === 'string') code = Number(value);
    };
    stream.on('response', codeOf);
    stream.on('trailers', codeOf);
    stream.on('data', (chunk: Buffer) => {
      for (const frame of reader.push(chunk)) answer ??= frame.message;
    });
    stream.on('error', () => undefined);
    stream.on('close', () => {
      clearTimeout(timer);
      resolve({ code: code ?? 14, message: answer });
    });
    stream.end(grpcFrame(message));
  });
}
