/**
 * @module upstream-relay
 * Forwards one admitted request to the upstream (undici) and relays its answer, SSE event by event.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { REASONS, type Rejection } from 'a2a-ratelimit';
import type { AdmissionTicket, Limiter } from 'a2a-ratelimit/server';
import type { Dispatcher } from 'undici';
import { rejectionAnswer, writeAnswer } from './answer-writer.js';
import type { ClassifiedRequest } from './classify-request.js';
import { isStreaming } from './classify-request.js';
import type { GatewayRefusal, UpstreamAnswer } from './gateway-options.js';
import { SseDataReader, sightingOfAnswer, type TaskSighting } from './task-sightings.js';
import type { TaskWatch, WatchScope } from './task-watch.js';
import { forwardHeaders, isRelayedAnswerHeader } from './upstream-client.js';
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
  /** A task of an admission is still running once its answer ended. */
  readonly running: (taskId: string, request: ClassifiedRequest) => void;
  /** Keeps how to follow a task still running (told before `running`). */
  readonly remember?:
    | ((taskId: string, request: ClassifiedRequest, req: IncomingMessage) => void)
    | undefined;
  readonly refused: (refusal: GatewayRefusal) => void;
  /** Told each upstream answer's status and latency (`GatewayOptions.onUpstream`). */
  readonly onUpstream?: ((answer: UpstreamAnswer) => void) | undefined;
}

/** What one relayed exchange adds to its host. */
export interface RelayHooks {
  /**
   * Rewrites a 200 JSON answer read whole (the caller's extended card); undefined relays it as
   * the upstream wrote it.
   */
  readonly rewriteAnswer?: ((body: Buffer) => Buffer | undefined) | undefined;
}

const NO_HOOKS: RelayHooks = {};

/** Methods whose JSON answers name a task (or a Message). */
const OBSERVED = new Set(['SendMessage', 'GetTask', 'CancelTask']);

/**
 * Forwards an admitted request — the canonical one it classified — and relays its answer;
 * resolves when the exchange has ended (the ticket has then ended too). An SSE stream goes chunk
 * by chunk as it arrives (never buffered; its events read on the side for task states), a JSON
 * answer that can name a task is read whole (bounded) for its task or Message, anything else is
 * piped. The admission's `RateLimit` headers go on the answer. The upstream unreachable or too
 * slow is a 503 `AGENT_UNAVAILABLE`; its own 429 / 503 with `Retry-After` is our quota / overload
 * rejection with its delay.
 *
 * @example
 * ```ts
 * await relay(host, req, res, request, ticket, scope);
 * ```
 */
export function relay(
  host: RelayHost,
  req: IncomingMessage,
  res: ServerResponse,
  request: ClassifiedRequest,
  ticket: AdmissionTicket,
  scope: WatchScope,
  hooks: RelayHooks = NO_HOOKS,
): Promise<void> {
  // The client left while its request was being decided: nothing is forwarded (no task is made
  // for nobody) and the admission ends now.
  if (res.destroyed) {
    ticket.end();
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const exchange = new Exchange(host, hooks, req, res, request, ticket, scope, resolve);
    (res as Relaying)[EXCHANGE] = exchange;
    res.on('close', onClientClose);
    host.dispatcher.dispatch(
      {
        origin: host.origin,
        path: request.path,
        method: request.verb,
        headers: forwardHeaders(req.headers, req.socket.remoteAddress, {
          body: request.body !== undefined,
        }),
        body: request.body ?? null,
        headersTimeout: host.upstreamTimeoutMs,
        bodyTimeout: 0,
      },
      exchange,
    );
  });
}

/** Where a client's answer keeps its exchange (one listener for every answer, no closure each). */
const EXCHANGE = Symbol('exchange');
type Relaying = ServerResponse & { [EXCHANGE]?: Exchange | undefined };

function onClientClose(this: Relaying): void {
  this[EXCHANGE]?.clientClosed();
}

function onClientDrain(this: Relaying): void {
  this[EXCHANGE]?.clientDrained();
}

/** How an answer is relayed, once its headers are in. */
const MODE = {
  /** No answer headers yet. */
  waiting: 0,
  /** The upstream's own 429 / 503 with a delay: its body dropped, a rejection written at its end. */
  refused: 1,
  /** An SSE stream: each chunk written as it arrives, its events read on the side. */
  stream: 2,
  /** A JSON answer that can name a task: read whole (up to a bound), then written. */
  read: 3,
  /** Anything else, or a read answer past its bound: each chunk written as it arrives. */
  pipe: 4,
} as const;
type Mode = (typeof MODE)[keyof typeof MODE];

/** The most of a refused answer's body read (to keep its connection) before it is cut. */
const MAX_DROPPED_BYTES = 128 * 1024;

const CLIENT_GONE = 'the client went away';

/**
 * One forwarded exchange: the undici dispatch handler (undici's own plain handler interface, the
 * one its `request` is built on: no body stream, no abort signal, no promise per chunk, the raw
 * answer headers turned straight into the client's) writing the answer to the client as it
 * arrives, pausing the upstream while the client's socket is full, cutting it when the client
 * leaves.
 */
class Exchange {
  private abort: ((error: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  private paused = false;
  private mode: Mode = MODE.waiting;
  /** The client left before its answer was written whole. */
  private gone = false;
  private ended = false;
  private status = 0;
  /** The answer's headers, names and values in turn (`writeHead`'s flat list). */
  private headers: string[] = [];
  private rejection: Rejection | undefined;
  private chunks: Buffer[] = [];
  private bytes = 0;
  private reader: SseDataReader | undefined;
  private last: TaskSighting | undefined;
  private readonly sentAt = performance.now();

  constructor(
    private readonly host: RelayHost,
    private readonly hooks: RelayHooks,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly request: ClassifiedRequest,
    private readonly ticket: AdmissionTicket,
    private readonly scope: WatchScope,
    private readonly resolve: () => void,
  ) {}

  /** The client's connection closed: before the answer was written whole, the upstream's is cut. */
  clientClosed(): void {
    if (this.res.writableFinished) return;
    this.gone = true;
    this.abort?.(new Error(CLIENT_GONE));
  }

  clientDrained(): void {
    if (!this.paused) return;
    this.paused = false;
    this.resume?.();
  }

  onConnect(abort: (error: Error) => void): void {
    this.abort = abort;
    if (this.gone) abort(new Error(CLIENT_GONE));
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (status < 200) return true; // 1xx: informational, the answer follows.
    this.resume = resume;
    try {
      this.start(status, rawHeaders);
    } catch {
      this.fail();
    }
    return !this.paused;
  }

  private start(status: number, rawHeaders: Buffer[]): void {
    this.answered(status);
    const { host, request } = this;
    const own = this.ticket.headers;
    const headers = this.headers;
    let mediaType = '';
    let retryAfter: string | undefined;
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      const name = String(rawHeaders[i]).toLowerCase();
      const value = (rawHeaders[i + 1] as Buffer).toString('latin1');
      if (name === 'content-type') mediaType = value;
      else if (name === 'retry-after') retryAfter = value;
      if (isRelayedAnswerHeader(name) && !Object.hasOwn(own, name)) headers.push(name, value);
    }
    for (const name in own) headers.push(name, own[name] as string);
    if (status === 429 || status === 503) {
      this.rejection = upstreamRejection(
        request.method,
        status,
        retryAfter,
        host.limiter.clock.nowMs(),
      );
      if (this.rejection !== undefined) {
        this.mode = MODE.refused;
        return;
      }
    }
    this.status = status;
    if (isStreaming(request.method) && mediaType.startsWith('text/event-stream')) {
      this.mode = MODE.stream;
      this.res.writeHead(status, headers);
      this.res.flushHeaders();
      this.headers = []; // Written: an open stream keeps nothing it no longer needs.
      this.reader = new SseDataReader((data) => this.readEvent(data), host.maxObservedAnswerBytes);
    } else if (
      status === 200 &&
      (OBSERVED.has(request.method) || this.hooks.rewriteAnswer !== undefined) &&
      mediaType.includes('json')
    ) {
      this.mode = MODE.read;
    } else {
      this.mode = MODE.pipe;
      this.res.writeHead(status, headers);
      this.headers = [];
    }
  }

  /** An SSE event's data, read for task states. */
  private readEvent(data: string): void {
    try {
      this.see(sightingOfAnswer(this.request.binding, JSON.parse(data)));
    } catch {
      // Not JSON: relayed, not read.
    }
  }

  onData(chunk: Buffer): boolean {
    try {
      switch (this.mode) {
        case MODE.refused:
          this.bytes += chunk.length;
          if (this.bytes > MAX_DROPPED_BYTES) this.abort?.(new Error('refusal body too long'));
          break;
        case MODE.stream:
          // Relayed first, read after: reading never delays an event.
          this.write(chunk);
          this.reader?.push(chunk);
          break;
        case MODE.read:
          this.chunks.push(chunk);
          this.bytes += chunk.length;
          if (this.bytes > this.host.maxObservedAnswerBytes) {
            // Too large to read: relayed as it comes.
            this.mode = MODE.pipe;
            this.res.writeHead(this.status, this.headers);
            const last = this.chunks.length - 1;
            for (let i = 0; i < last; i++) this.res.write(this.chunks[i]);
            this.write(chunk);
            this.chunks = [];
          }
          break;
        default:
          this.write(chunk);
      }
    } catch {
      this.fail();
    }
    return !this.paused;
  }

  onComplete(): void {
    try {
      if (this.mode === MODE.refused) this.refuse();
      else if (this.mode === MODE.read) this.endRead();
      else this.res.end();
    } catch {
      this.fail();
      return;
    }
    this.finish();
  }

  onError(error: Error): void {
    try {
      if (this.mode === MODE.waiting) {
        if (!this.gone) this.unavailable(error);
      } else if (this.mode === MODE.refused) this.refuse();
      // Either side went away mid-answer: the client's answer ends here.
      else this.res.destroy();
    } catch {
      this.res.destroy();
    } finally {
      this.finish();
    }
  }

  /** Writes a chunk; a full socket pauses the upstream until it drains, a closed one cuts it. */
  private write(chunk: Buffer): void {
    if (this.res.destroyed) {
      this.gone = true;
      this.abort?.(new Error(CLIENT_GONE));
      return;
    }
    if (!this.res.write(chunk) && !this.paused) {
      this.paused = true;
      this.res.once('drain', onClientDrain);
    }
  }

  private endRead(): void {
    const res = this.res;
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    this.chunks = [];
    const rewritten = this.hooks.rewriteAnswer?.(body);
    if (rewritten !== undefined) {
      const headers: string[] = [];
      for (let i = 0; i + 1 < this.headers.length; i += 2) {
        const name = this.headers[i] as string;
        if (name !== 'content-length') headers.push(name, this.headers[i + 1] as string);
      }
      headers.push('content-length', String(rewritten.length));
      res.writeHead(this.status, headers);
      res.end(rewritten);
      return;
    }
    try {
      this.see(sightingOfAnswer(this.request.binding, JSON.parse(body.toString('utf8'))));
    } catch {
      // Not JSON: relayed, not read.
    }
    res.writeHead(this.status, this.headers);
    res.end(body);
  }

  private see(sighting: TaskSighting | undefined): void {
    if (sighting === undefined) return;
    const watch = this.host.watch;
    if (sighting.kind === 'message') watch.message(this.scope, sighting.message);
    else {
      // The first sighting binds the admission; later ones only report states.
      const bind = this.last === undefined ? this.scope : undefined;
      watch.task(bind, sighting.taskId, sighting.state, sighting.object);
    }
    this.last = sighting;
  }

  private answered(status: UpstreamAnswer['status'], error?: UpstreamAnswer['error']): void {
    const onUpstream = this.host.onUpstream;
    if (onUpstream === undefined) return;
    onUpstream({
      binding: this.request.binding,
      method: this.request.method,
      status,
      ...(error === undefined ? {} : { error }),
      seconds: (performance.now() - this.sentAt) / 1000,
    });
  }

  /** The upstream could not be reached, or did not answer in time. */
  private unavailable(error: Error): void {
    const { host, request } = this;
    const why = (error as { code?: string }).code ?? error.message;
    this.answered('error', /TIMEOUT/i.test(why) ? 'timeout' : 'unreachable');
    const rejection = unavailableRejection(request.method, host.unavailableRetryAfterMs, why);
    this.refusal(503, rejection);
    writeAnswer(this.res, rejectionAnswer(host, request, rejection));
  }

  /** The upstream's own 429 / 503 with a delay, written as a rejection. */
  private refuse(): void {
    const rejection = this.rejection as Rejection;
    this.refusal(rejection.kind === 'quota' ? 429 : 503, rejection);
    writeAnswer(this.res, rejectionAnswer(this.host, this.request, rejection));
  }

  private refusal(status: number, rejection: Rejection): void {
    const { scope, request } = this;
    this.host.refused({
      caller: scope.caller,
      method: request.method,
      binding: request.binding,
      status,
      policy: 'upstream',
      retryAfterMs: rejection.retryAfterMs,
      reason: rejection.reason ?? REASONS[rejection.kind],
      ...(scope.tenant === undefined ? {} : { tenant: scope.tenant }),
    });
  }

  /** Something failed while writing the answer: both sides are cut. */
  private fail(): void {
    this.res.destroy();
    this.abort?.(new Error('the answer could not be relayed'));
    this.finish();
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    const res = this.res as Relaying;
    res.off('close', onClientClose);
    res.off('drain', onClientDrain);
    res[EXCHANGE] = undefined;
    const { host, last, request } = this;
    try {
      if (this.mode >= MODE.stream && last?.kind === 'task' && host.watch.watching(last.taskId)) {
        host.remember?.(last.taskId, request, this.req);
        host.running(last.taskId, request);
      }
    } finally {
      this.ticket.end();
      this.resolve();
    }
  }
}
