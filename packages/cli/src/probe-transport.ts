/**
 * @module probe-transport
 * How `probe` talks to an agent: one raw A2A call at a time over one binding, the response captured
 * as it arrived.
 */

import { randomUUID } from 'node:crypto';
import { CliError } from './cli-error.js';
import type { CliBinding } from './cli-options.js';
import { PROBE_MAX_BODY_BYTES, readCappedText } from './probe-capped-body.js';
import type { ProbeMethod } from './probe-methods.js';

/**
 * One response, as it arrived.
 */
export interface CapturedResponse {
  readonly binding: CliBinding;
  /** The call succeeded by its binding's rules (2xx without a JSON-RPC error; gRPC OK). */
  readonly ok: boolean;
  /** HTTP status, or gRPC status code. */
  readonly status: number;
  /** HTTP headers, or gRPC headers and trailers (text values); lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** HTTP media type, lower-case, without parameters. */
  readonly mediaType?: string;
  /** HTTP body text (at most {@link PROBE_MAX_BODY_BYTES} read), or the gRPC status message. */
  readonly body: string;
  /** HTTP: the body went on past {@link PROBE_MAX_BODY_BYTES}; the rest was not read. */
  readonly truncated?: boolean;
  /** gRPC: `grpc-status-details-bin`, decoded from base64. */
  readonly statusDetails?: Uint8Array;
  /** gRPC: the client made this status up from an HTTP error; no gRPC response arrived. */
  readonly synthesized?: boolean;
  /** Task id of a successful SendMessage, when it answered with a task. */
  readonly taskId?: string;
  /**
   * HTTP: a 2xx whose body is no A2A answer (an HTML page, or JSON with no task, message or
   * JSON-RPC envelope): what it was. Such a response is not `ok` — a gateway answered, not the agent.
   */
  readonly notA2A?: string;
}

/**
 * One request, fixed once built: sending it again re-sends the same bytes (same messageId).
 *
 * @example
 * ```ts
 * const call = transport.build('SendMessage');
 * const first = await transport.send(call);
 * const again = await transport.send(call);
 * ```
 */
export interface ProbeCall {
  readonly method: ProbeMethod;
  /** messageId of a SendMessage / SendStreamingMessage. */
  readonly messageId?: string;
  /** JSON form of the A2A request (ProtoJSON). */
  readonly json: Readonly<Record<string, unknown>>;
  /** JSON-RPC id. */
  readonly id: number;
}

/**
 * Sends probe calls over one binding, to exactly the address it was given, and captures each raw
 * response. No retrying client in between: the probe wants to see the wire, not recover from it.
 *
 * @example
 * ```ts
 * const transport = httpProbeTransport({ binding: 'rest', endpoint: 'http://gw/a2a/rest', timeoutMs: 10_000 });
 * ```
 */
export interface ProbeTransport {
  readonly binding: CliBinding;
  /** Where the calls go (URL, or gRPC `host:port`). */
  readonly endpoint: string;
  /** Builds a call (a fresh messageId for messages; `taskId` for GetTask). */
  build(method: ProbeMethod, taskId?: string): ProbeCall;
  /** Sends it once and captures the answer; throws a {@link CliError} when nothing answers. */
  send(call: ProbeCall): Promise<CapturedResponse>;
  /** Resolves once calls can be sent (gRPC: the channel is up); throws like `send`. */
  connect(): Promise<void>;
  close(): void;
}

/**
 * Options shared by the transports.
 */
export interface ProbeTransportOptions {
  /** URL (HTTP bindings) or `host:port` (gRPC). */
  readonly endpoint: string;
  /** Sent as `authorization: Bearer <token>`. */
  readonly callerToken?: string;
  /** Longest wait for one response, ms. */
  readonly timeoutMs: number;
}

let nextId = 1;

/** The request `method` sends (a fresh messageId for a message; `taskId` for GetTask). */
export function buildCall(method: ProbeMethod, taskId: string | undefined): ProbeCall {
  const id = nextId++;
  if (method === 'SendMessage' || method === 'SendStreamingMessage') {
    const messageId = `probe-${randomUUID()}`;
    return {
      method,
      messageId,
      id,
      json: {
        message: {
          messageId,
          role: 'ROLE_USER',
          parts: [{ text: 'a2a-ratelimit probe: checking how a rejection arrives' }],
        },
        // Not waiting for the task: a concurrency limit then refuses while earlier tasks work.
        ...(method === 'SendMessage' ? { configuration: { returnImmediately: true } } : {}),
      },
    };
  }
  if (method === 'GetTask') return { method, id, json: { id: taskId ?? '' } };
  return { method, id, json: {} };
}

function mediaTypeOf(contentType: string | null): string | undefined {
  if (contentType === null) return undefined;
  const type = (contentType.split(';', 1)[0] ?? '').trim().toLowerCase();
  return type === '' ? undefined : type;
}

function taskIdOf(text: string): string | undefined {
  try {
    const parsed = JSON.parse(text) as {
      result?: { task?: { id?: unknown } };
      task?: { id?: unknown };
    };
    const id = parsed.result?.task?.id ?? parsed.task?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why a 2xx HTTP body is not an A2A answer (undefined when it is one): JSON-RPC needs an envelope
 * (`jsonrpc` with `result` or `error`); REST a JSON object with a task, a message, or (GetTask /
 * ListTasks) the task fields or `tasks`. Streams are taken as they come.
 */
function notA2AAnswer(
  binding: 'jsonrpc' | 'rest',
  mediaType: string | undefined,
  text: string,
): string | undefined {
  if (mediaType === 'text/event-stream') return undefined;
  const html = mediaType === 'text/html' || /^\s*<(!doctype|html)/i.test(text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    if (text.trim() === '') return 'an empty body';
    return html
      ? `an HTML page (${mediaType ?? 'no Content-Type'})`
      : `${mediaType ?? 'no Content-Type'}, not JSON`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return 'JSON that is not an object';
  }
  const o = parsed as Record<string, unknown>;
  if (binding === 'jsonrpc') {
    return o.jsonrpc === '2.0' && ('result' in o || 'error' in o)
      ? undefined
      : 'JSON with no JSON-RPC envelope';
  }
  const a2a = 'task' in o || 'message' in o || 'tasks' in o || ('id' in o && 'status' in o);
  return a2a ? undefined : 'JSON with no task or message';
}

function hasJsonRpcError(text: string): boolean {
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null && 'error' in parsed;
  } catch {
    return false;
  }
}

/**
 * Why a fetch failed, as briefly as the error allows: the system error code (`ECONNREFUSED`), or
 * the cause's message.
 *
 * @example
 * ```ts
 * await fetch(url).catch((e) => networkReason(e)); // 'ECONNREFUSED'
 * ```
 */
export function networkReason(error: unknown): string {
  const cause = (
    error as { cause?: { code?: unknown; message?: unknown; errors?: { code?: unknown }[] } }
  ).cause;
  const code = cause?.code ?? cause?.errors?.find((e) => typeof e.code === 'string')?.code;
  if (typeof code === 'string') return code;
  if (typeof cause?.message === 'string' && cause.message !== '') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

function unreachable(endpoint: string, error: unknown): CliError {
  return new CliError(`cannot reach ${endpoint}: ${networkReason(error)}`, { cause: error });
}

/**
 * The JSON-RPC or REST transport: raw `fetch` to the endpoint URL.
 *
 * @example
 * ```ts
 * const t = httpProbeTransport({ binding: 'jsonrpc', endpoint: 'http://127.0.0.1:8080/a2a/jsonrpc', timeoutMs: 10_000 });
 * const r = await t.send(t.build('SendMessage'));
 * ```
 */
export function httpProbeTransport(
  options: ProbeTransportOptions & {
    readonly binding: 'jsonrpc' | 'rest';
    readonly fetch?: typeof fetch;
  },
): ProbeTransport {
  const doFetch = options.fetch ?? globalThis.fetch;
  const base = options.endpoint.replace(/\/+$/, '');
  const auth: Record<string, string> =
    options.callerToken === undefined ? {} : { authorization: `Bearer ${options.callerToken}` };
  const request = (call: ProbeCall): { url: string; init: RequestInit } => {
    const streaming = call.method === 'SendStreamingMessage';
    const accept = streaming ? 'text/event-stream' : 'application/json, application/a2a+json';
    if (options.binding === 'jsonrpc') {
      return {
        url: base,
        init: {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept, 'a2a-version': '1.0', ...auth },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: call.id,
            method: call.method,
            params: call.json,
          }),
        },
      };
    }
    const headers = { accept, 'a2a-version': '1.0', ...auth };
    switch (call.method) {
      case 'SendMessage':
      case 'SendStreamingMessage':
        return {
          url: `${base}/message:${streaming ? 'stream' : 'send'}`,
          init: {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/a2a+json' },
            body: JSON.stringify(call.json),
          },
        };
      case 'GetTask':
        return {
          url: `${base}/tasks/${encodeURIComponent(String(call.json.id ?? ''))}`,
          init: { method: 'GET', headers },
        };
      default:
        return { url: `${base}/tasks`, init: { method: 'GET', headers } };
    }
  };
  return {
    binding: options.binding,
    endpoint: base,
    build: buildCall,
    // The card was read from the same origin: nothing to wait for.
    connect: async () => {},
    async send(call) {
      const { url, init } = request(call);
      let response: Response;
      let text: string;
      let truncated: boolean;
      try {
        response = await doFetch(url, { ...init, signal: AbortSignal.timeout(options.timeoutMs) });
        const opened =
          response.ok && mediaTypeOf(response.headers.get('content-type')) === 'text/event-stream';
        if (opened) {
          // An admitted stream runs as long as its task: its status says enough, so hang up.
          await response.body?.cancel().catch(() => {});
          text = '';
          truncated = false;
        } else ({ text, truncated } = await readCappedText(response, PROBE_MAX_BODY_BYTES));
      } catch (error) {
        if ((error as Error).name === 'TimeoutError') {
          throw new CliError(`no answer from ${url} within ${options.timeoutMs} ms`, {
            cause: error,
          });
        }
        throw unreachable(url, error);
      }
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        headers[name.toLowerCase()] = value;
      });
      const mediaType = mediaTypeOf(response.headers.get('content-type'));
      const twoHundred = response.status >= 200 && response.status < 300;
      // A 2xx cut at the cap cannot be parsed: it is taken as the answer it started as.
      const notA2A =
        twoHundred && !truncated ? notA2AAnswer(options.binding, mediaType, text) : undefined;
      const success =
        twoHundred &&
        notA2A === undefined &&
        (options.binding === 'rest' ||
          mediaType === 'text/event-stream' ||
          truncated ||
          !hasJsonRpcError(text));
      const taskId = success ? taskIdOf(text) : undefined;
      return {
        binding: options.binding,
        ok: success,
        status: response.status,
        headers,
        ...(mediaType === undefined ? {} : { mediaType }),
        body: text,
        ...(truncated ? { truncated } : {}),
        ...(taskId === undefined ? {} : { taskId }),
        ...(notA2A === undefined ? {} : { notA2A }),
      };
    },
    close() {},
  };
}
