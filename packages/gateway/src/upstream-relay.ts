/**
 * @module upstream-relay
 * Forwards one admitted request — the canonical one it classified — to the upstream through
 * undici and relays the answer: an SSE stream chunk by chunk as it arrives (never buffered; its
 * events read on the side for task states), a JSON answer that can name a task read whole (up to
 * a bound) for its task or Message, anything else piped through. The admission's `RateLimit`
 * headers go on the answer; its ticket ends when the exchange ends on either side. The
 * upstream's failures become rejections: unreachable or too slow → 503 `AGENT_UNAVAILABLE`; its
 * own 429 / 503 with `Retry-After` → quota / overload with its delay.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { REASONS, type Rejection } from 'a2a-ratelimit';
import type { AdmissionTicket, Limiter } from 'a2a-ratelimit/server';
import type { Dispatcher } from 'undici';
import type { ClassifiedRequest } from './classify-request.js';
import { isStreaming } from './classify-request.js';
import type { GatewayAnswer } from './gateway-answers.js';
import type { GatewayRefusal, UpstreamAnswer } from './gateway-options.js';
import { SseDataReader, sightingOfAnswer, type TaskSighting } from './task-sightings.js';
import type { TaskWatch, WatchScope } from './task-watch.js';
import { answerHeaders, forwardHeaders } from './upstream-client.js';
import { unavailableRejection, upstreamRejection } from './upstream-failure.js';

/** What the relay needs from its gateway. */
export interface RelayHost {
  readonly dispatcher: Dispatcher;
  readonly origin: string;
  readonly limiter: Limiter;
  readonly mirrorHttpStatus: boolean;
  readonly upstreamTimeoutMs: number;
  readonly unavailableRetryAfterMs: number;
  readonly maxObservedAnswerBytes: number;
  readonly watch: TaskWatch;
  /** A task of this admission is still running once its answer ended. */
  readonly running: (taskId: string, request: ClassifiedRequest) => void;
  readonly refused: (refusal: GatewayRefusal) => void;
  /** Told each upstream answer's status and latency (`GatewayOptions.onUpstream`). */
  readonly onUpstream?: ((answer: UpstreamAnswer) => void) | undefined;
  /**
   * Rewrites a 200 JSON answer read whole (the caller's extended card); undefined relays it as
   * the upstream wrote it.
   */
  readonly rewriteAnswer?: ((body: Buffer) => Buffer | undefined) | undefined;
}

/** Methods whose JSON answers name a task (or a Message). */
const OBSERVED = new Set(['SendMessage', 'GetTask', 'CancelTask']);

/**
 * Writes an answer (headers merged; no body for HEAD, which node drops itself).
 *
 * @example
 * ```ts
 * writeAnswer(res, jsonRpcError(null, -32600, 'no'));
 * ```
 */
export function writeAnswer(
  res: ServerResponse,
  answer: GatewayAnswer,
  extra: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  res.writeHead(answer.status, {
    ...extra,
    ...answer.headers,
    'content-length': Buffer.byteLength(answer.body),
  });
  res.end(answer.body);
}

/**
 * A rejection in the request's binding, written by the limiter's encoders.
 *
 * @example
 * ```ts
 * writeRejection(host, res, request, rejection, limits);
 * ```
 */
export function rejectionAnswer(
  host: Pick<RelayHost, 'limiter' | 'mirrorHttpStatus'>,
  request: Pick<ClassifiedRequest, 'binding' | 'id'>,
  rejection: Rejection,
  limits?: Parameters<Limiter['encodeRest']>[1],
): GatewayAnswer {
  return request.binding === 'jsonrpc'
    ? host.limiter.encodeJsonRpc(rejection, request.id, limits, host.mirrorHttpStatus)
    : host.limiter.encodeRest(rejection, limits);
}

/**
 * Forwards an admitted request and relays its answer; resolves when the exchange has ended
 * (the ticket has then ended too).
 *
 * @example
 * ```ts
 * await relay(host, req, res, request, ticket, scope);
 * ```
 */
export async function relay(
  host: RelayHost,
  req: IncomingMessage,
  res: ServerResponse,
  request: ClassifiedRequest,
  ticket: AdmissionTicket,
  scope: WatchScope,
): Promise<void> {
  const abort = new AbortController();
  const onClose = (): void => {
    if (!res.writableFinished) abort.abort();
  };
  res.on('close', onClose);
  try {
    await exchange(host, req, res, request, ticket, scope, abort.signal);
  } finally {
    res.off('close', onClose);
    ticket.end();
  }
}

async function exchange(
  host: RelayHost,
  req: IncomingMessage,
  res: ServerResponse,
  request: ClassifiedRequest,
  ticket: AdmissionTicket,
  scope: WatchScope,
  signal: AbortSignal,
): Promise<void> {
  const headers = forwardHeaders(req.headers, req.socket.remoteAddress);
  const sentAt = performance.now();
  const answered = (status: UpstreamAnswer['status'], error?: UpstreamAnswer['error']): void =>
    host.onUpstream?.({
      binding: request.binding,
      method: request.method,
      status,
      ...(error === undefined ? {} : { error }),
      seconds: (performance.now() - sentAt) / 1000,
    });
  let response: Dispatcher.ResponseData;
  try {
    response = await host.dispatcher.request({
      origin: host.origin,
      path: request.path,
      method: request.verb,
      headers,
      body: request.body ?? null,
      signal,
      headersTimeout: host.upstreamTimeoutMs,
      bodyTimeout: 0,
    });
  } catch (error) {
    if (signal.aborted) return;
    const why = (error as { code?: string }).code ?? (error as Error).message;
    answered('error', /TIMEOUT/i.test(why) ? 'timeout' : 'unreachable');
    const rejection = unavailableRejection(request.method, host.unavailableRetryAfterMs, why);
    host.refused({
      caller: scope.caller,
      method: request.method,
      binding: request.binding,
      status: 503,
      policy: 'upstream',
      retryAfterMs: rejection.retryAfterMs,
      reason: rejection.reason ?? REASONS[rejection.kind],
      ...(scope.tenant === undefined ? {} : { tenant: scope.tenant }),
    });
    writeAnswer(res, rejectionAnswer(host, request, rejection));
    return;
  }
  const status = response.statusCode;
  answered(status);
  const retryAfter = response.headers['retry-after'];
  const rejection = upstreamRejection(
    request.method,
    status,
    typeof retryAfter === 'string' ? retryAfter : undefined,
    host.limiter.clock.nowMs(),
  );
  if (rejection !== undefined) {
    await response.body.dump().catch(() => undefined);
    host.refused({
      caller: scope.caller,
      method: request.method,
      binding: request.binding,
      status: rejection.kind === 'quota' ? 429 : 503,
      policy: 'upstream',
      retryAfterMs: rejection.retryAfterMs,
      reason: rejection.reason ?? REASONS[rejection.kind],
      ...(scope.tenant === undefined ? {} : { tenant: scope.tenant }),
    });
    writeAnswer(res, rejectionAnswer(host, request, rejection));
    return;
  }
  for (const [name, value] of answerHeaders(response.headers)) res.setHeader(name, value);
  for (const [name, value] of Object.entries(ticket.headers)) res.setHeader(name, value);
  res.statusCode = status;
  const type = String(response.headers['content-type'] ?? '');
  let last: TaskSighting | undefined;
  const see = (sighting: TaskSighting | undefined): void => {
    if (sighting === undefined) return;
    if (sighting.kind === 'message') host.watch.message(scope, sighting.message);
    else {
      // The first sighting binds the admission; later ones only report states.
      const bind = last === undefined ? scope : undefined;
      host.watch.task(bind, sighting.taskId, sighting.state, sighting.object);
    }
    last = sighting;
  };
  try {
    if (isStreaming(request.method) && type.startsWith('text/event-stream')) {
      res.flushHeaders();
      const reader = new SseDataReader((data) => {
        try {
          see(sightingOfAnswer(request.binding, JSON.parse(data)));
        } catch {
          // Not JSON: relayed, not read.
        }
      }, host.maxObservedAnswerBytes);
      for await (const chunk of response.body) {
        reader.push(chunk as Buffer);
        if (!res.write(chunk)) await drained(res, signal);
      }
      res.end();
    } else if (
      status === 200 &&
      (OBSERVED.has(request.method) || host.rewriteAnswer !== undefined) &&
      type.includes('json')
    ) {
      const chunks: Buffer[] = [];
      let bytes = 0;
      let read = true;
      for await (const chunk of response.body) {
        if (read) {
          chunks.push(chunk as Buffer);
          bytes += (chunk as Buffer).length;
          if (bytes > host.maxObservedAnswerBytes) {
            // Too large to read: relayed as it comes.
            read = false;
            for (const c of chunks) res.write(c);
          }
        } else if (!res.write(chunk)) await drained(res, signal);
      }
      if (read) {
        const body = Buffer.concat(chunks);
        const rewritten = host.rewriteAnswer?.(body);
        if (rewritten !== undefined) {
          res.setHeader('content-length', rewritten.length);
          res.end(rewritten);
          return;
        }
        try {
          see(sightingOfAnswer(request.binding, JSON.parse(body.toString('utf8'))));
        } catch {
          // Not JSON: relayed, not read.
        }
        res.end(body);
      } else res.end();
    } else {
      for await (const chunk of response.body) {
        if (!res.write(chunk)) await drained(res, signal);
      }
      res.end();
    }
  } catch {
    // Either side went away mid-answer: the client's answer ends here.
    res.destroy();
  }
  if (last?.kind === 'task' && host.watch.watching(last.taskId)) host.running(last.taskId, request);
}

function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new Error('client gone'));
      return;
    }
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      if (signal.aborted) reject(new Error('client gone'));
      else resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
