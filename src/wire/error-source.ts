/**
 * @module error-source
 * Finding the wire response inside a thrown error of any origin, through its `cause` chain.
 */

/**
 * What a thrown error turned out to carry.
 */
export type ErrorSource =
  | {
      readonly kind: 'http';
      readonly status?: number;
      readonly headers?: unknown;
      readonly body?: string;
      readonly message?: string;
    }
  | {
      readonly kind: 'grpc';
      readonly code: number;
      readonly message?: string;
      readonly metadata: unknown;
    }
  | { readonly kind: 'network'; readonly code: string; readonly message?: string }
  | { readonly kind: 'aborted'; readonly message?: string }
  | { readonly kind: 'unknown'; readonly message?: string };

/**
 * Error codes of a connection that failed or broke: the request may or may not have been applied.
 *
 * @example
 * ```ts
 * NETWORK_ERROR_CODES.has('ECONNRESET'); // true
 * ```
 */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ERR_HTTP2_STREAM_ERROR',
  'ERR_HTTP2_SESSION_ERROR',
  'ERR_HTTP2_GOAWAY_SESSION',
]);

const MAX_CAUSE_DEPTH = 8;

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return (typeof value === 'object' || typeof value === 'function') && value !== null;
}

function read(o: Obj, key: string): unknown {
  try {
    return o[key];
  } catch {
    return undefined;
  }
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function integerOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

/** The error, its `cause`s and any attached `response`, outermost first, without cycles. */
function chainOf(error: unknown): Obj[] {
  const out: Obj[] = [];
  let current: unknown = error;
  while (isObject(current) && out.length < MAX_CAUSE_DEPTH && !out.includes(current)) {
    out.push(current);
    const response = read(current, 'response');
    if (isObject(response) && !out.includes(response)) out.push(response);
    current = read(current, 'cause');
  }
  return out;
}

/** A response body: `body` text, or `data` as text or an already-parsed JSON value (axios). */
function bodyText(o: Obj): string | undefined {
  const body = read(o, 'body');
  if (typeof body === 'string') return body;
  const data = read(o, 'data');
  if (typeof data === 'string') return data;
  return isObject(data) ? safeStringify(data) : undefined;
}

function safeStringify(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

function messageOf(o: Obj): string | undefined {
  return stringOf(read(o, 'details')) ?? stringOf(read(o, 'message'));
}

function asGrpcServiceError(o: Obj): ErrorSource | undefined {
  const code = integerOf(read(o, 'code'));
  const metadata = read(o, 'metadata');
  if (code === undefined || code < 0 || code > 16 || !isObject(metadata)) return undefined;
  return { kind: 'grpc', code, ...optional('message', messageOf(o)), metadata };
}

function asHttpResponse(o: Obj): ErrorSource | undefined {
  const status = integerOf(read(o, 'statusCode')) ?? integerOf(read(o, 'status'));
  const headers = read(o, 'headers');
  if (status === undefined || status < 100 || status > 599 || !isObject(headers)) return undefined;
  return {
    kind: 'http',
    status,
    headers,
    ...optional('body', bodyText(o)),
    ...optional('message', stringOf(read(o, 'message'))),
  };
}

function asGrpcDetailsCarrier(o: Obj): ErrorSource | undefined {
  const code = integerOf(read(o, 'status')) ?? integerOf(read(o, 'code'));
  const bin = read(o, 'statusDetailsBin');
  if (code === undefined || code < 0 || code > 16 || !(bin instanceof Uint8Array)) return undefined;
  return {
    kind: 'grpc',
    code,
    ...optional('message', messageOf(o)),
    metadata: { 'grpc-status-details-bin': bin },
  };
}

/** A JSON-RPC error: the SDK's `envelopeCode` + `data`, or a raw `{code, message, data?}`. */
function asJsonRpcError(o: Obj): ErrorSource | undefined {
  const envelope = read(o, 'errorResponse');
  if (isObject(envelope) && isObject(read(envelope, 'error'))) {
    return {
      kind: 'http',
      ...optional('body', safeStringify(envelope)),
      ...optional('message', messageOf(o)),
    };
  }
  const code = integerOf(read(o, 'envelopeCode')) ?? integerOf(read(o, 'code'));
  if (code === undefined) return undefined;
  // The SDK reports an HTTP status in `envelopeCode` for some stream failures.
  if (code >= 100 && code <= 599 && read(o, 'envelopeCode') !== undefined) {
    return { kind: 'http', status: code, ...optional('message', messageOf(o)) };
  }
  if (code >= 0) return undefined;
  const error = { code, message: stringOf(read(o, 'message')) ?? '', data: read(o, 'data') };
  return {
    kind: 'http',
    ...optional('body', safeStringify({ jsonrpc: '2.0', error })),
    message: error.message,
  };
}

function asNetworkFailure(o: Obj): ErrorSource | undefined {
  const code = stringOf(read(o, 'code')) ?? stringOf(read(o, 'errno'));
  if (code === undefined || !NETWORK_ERROR_CODES.has(code)) return undefined;
  return { kind: 'network', code, ...optional('message', stringOf(read(o, 'message'))) };
}

function asAbort(o: Obj): ErrorSource | undefined {
  const name = stringOf(read(o, 'name'));
  if (name !== 'AbortError' && name !== 'TimeoutError') return undefined;
  return { kind: 'aborted', ...optional('message', stringOf(read(o, 'message'))) };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** Recognisers in priority order: the most complete wire evidence first. */
const RECOGNISERS: readonly ((o: Obj) => ErrorSource | undefined)[] = [
  asGrpcServiceError,
  asHttpResponse,
  asGrpcDetailsCarrier,
  asJsonRpcError,
  asAbort,
  asNetworkFailure,
];

/**
 * Finds what a thrown error carries: for each recogniser in priority order (gRPC status with
 * metadata, HTTP response, gRPC details bytes, JSON-RPC error, abort, network failure) the first
 * object in the error's `cause` chain that matches. Never throws.
 *
 * @example
 * ```ts
 * errorSource(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
 * // { kind: 'network', code: 'ECONNRESET', message: 'read ECONNRESET' }
 * ```
 */
export function errorSource(error: unknown): ErrorSource {
  const chain = chainOf(error);
  for (const recognise of RECOGNISERS) {
    for (const o of chain) {
      const found = recognise(o);
      if (found !== undefined) return found;
    }
  }
  const first = chain[0];
  return {
    kind: 'unknown',
    ...optional(
      'message',
      first === undefined ? stringOf(error) : stringOf(read(first, 'message')),
    ),
  };
}
