/**
 * @module grpc-relay
 * Relays one admitted gRPC call to the upstream frame by frame (headers, messages, trailers,
 * cancel, deadline), re-encoding nothing.
 */

import {
  constants,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { type A2AMethod, REASONS } from 'a2a-ratelimit';
import type { AdmissionTicket, Limiter } from 'a2a-ratelimit/server';
import type { GatewayRefusal } from './gateway-options.js';
import { GRPC_PREFIX_BYTES, GrpcFrameReader, grpcFrame, messageBytes } from './grpc-frames.js';
import { GRPC_OBSERVED, grpcSightingOf } from './grpc-sightings.js';
import { forwardGrpcHeaders, type GrpcUpstream } from './grpc-upstream.js';
import { grpcUpstreamRejection } from './grpc-upstream-rejection.js';
import type { TaskSighting } from './task-sightings.js';
import type { TaskWatch, WatchScope } from './task-watch.js';
import { unavailableRejection } from './upstream-failure.js';

/** What the relay needs from its gateway. */
export interface GrpcRelayHost {
  readonly upstream: GrpcUpstream;
  readonly limiter: Limiter;
  readonly watch: TaskWatch;
  readonly upstreamTimeoutMs: number;
  readonly unavailableRetryAfterMs: number;
  readonly maxObservedAnswerBytes: number;
  /** A call refused (for a log line / metric). */
  readonly refused: (refusal: GatewayRefusal) => void;
  /** The upstream could not be reached (for a log line / metric). */
  readonly unavailable: (scope: WatchScope, method: A2AMethod, retryAfterMs: number) => void;
  /** A task of this admission is still running once its call ended. */
  readonly running: (taskId: string, call: GrpcCallToRelay) => void;
}

/** One admitted call to relay. */
export interface GrpcCallToRelay {
  readonly stream: ServerHttp2Stream;
  readonly headers: IncomingHttpHeaders;
  readonly path: string;
  readonly method: A2AMethod;
  /**
   * The decided request message, framed uncompressed (whatever compression it came in, the agent
   * is sent the very bytes decided): all the agent is sent.
   */
  readonly frame: Buffer;
  /** Whether the caller already ended its side. */
  readonly clientEnded: boolean;
  /** When the caller's deadline passes (ms on `Date.now()`'s clock), if it set one. */
  readonly deadlineAtMs: number | undefined;
  readonly ticket: AdmissionTicket;
  readonly scope: WatchScope;
  /**
   * Rewrites the one answer message of a unary call (its uncompressed bytes; undefined keeps
   * them): the answer is then read whole, up to the relay's bound, before it is sent on.
   */
  readonly rewriteAnswer?: ((message: Buffer) => Uint8Array | undefined) | undefined;
}

/** Methods whose answer is a stream of messages (all others answer one). */
const STREAMING: ReadonlySet<A2AMethod> = new Set(['SendStreamingMessage', 'SubscribeToTask']);

/** Response headers never relayed (hop-by-hop). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade']);

function relayedHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') || HOP_BY_HOP.has(name) || value === undefined) continue;
    out[name] = value;
  }
  return out;
}

/**
 * A `grpc-message` value: printable ASCII as it is, every other byte (and `%`) percent-encoded,
 * as the gRPC spec says.
 *
 * @example
 * ```ts
 * grpcMessageValue('retry in 1 s; ok'); // 'retry in 1 s; ok'
 * ```
 */
export function grpcMessageValue(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * A gRPC status sent as Trailers-Only (one header block, end of stream) — or as trailers when
 * headers were already sent.
 *
 * @example
 * ```ts
 * sendGrpcStatus(stream, 4, 'Deadline Exceeded');
 * ```
 */
export function sendGrpcStatus(
  stream: ServerHttp2Stream,
  code: number,
  message: string,
  metadata: Readonly<Record<string, string | Uint8Array>> = {},
): void {
  if (stream.closed || stream.destroyed) return;
  const fields: OutgoingHttpHeaders = { 'grpc-status': String(code) };
  if (message !== '') fields['grpc-message'] = grpcMessageValue(message);
  for (const [key, value] of Object.entries(metadata)) {
    fields[key] = typeof value === 'string' ? value : Buffer.from(value).toString('base64');
  }
  if (!stream.headersSent) {
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', ...fields },
      { endStream: true },
    );
    closeWhenAnswered(stream);
    return;
  }
  // Headers already went: the status goes as trailers once the data is flushed — the relay's own
  // trailer handler, when the stream has one, sends it instead of the agent's (trailers go once).
  if (STATUS_OVERRIDES.has(stream) || stream.writableEnded) return;
  STATUS_OVERRIDES.set(stream, fields);
  if (stream.listenerCount('wantTrailers') === 0)
    stream.once('wantTrailers', () => {
      stream.sendTrailers(fields);
      closeWhenAnswered(stream);
    });
  stream.end();
}

/** How often, and how many times, a call answered whole is checked for its last frame sent. */
const ANSWERED_POLL_MS = 10;
const ANSWERED_POLLS = 200;

/**
 * Ends a call whose answer's last frame has been submitted: a caller that has not ended its side
 * (an A2A call takes one message, read by then) is sent RST_STREAM NO_ERROR, as gRPC servers do,
 * so the call (and its admission, ended on the stream's close) ends with its answer, not when the
 * caller chooses to half-close. The reset waits for the answer's END_STREAM to have gone out
 * (a reset submitted sooner drops the trailers), or ~2 s when the caller's socket takes nothing.
 *
 * @example
 * ```ts
 * stream.sendTrailers({ 'grpc-status': '0' });
 * closeWhenAnswered(stream);
 * ```
 */
export function closeWhenAnswered(stream: ServerHttp2Stream): void {
  let polls = 0;
  const check = (): void => {
    if (stream.closed || stream.destroyed) return;
    if (stream.state.localClose === 1 || ++polls > ANSWERED_POLLS) {
      stream.close(constants.NGHTTP2_NO_ERROR);
      return;
    }
    setTimeout(check, ANSWERED_POLL_MS).unref();
  };
  setImmediate(check);
}

/** A status the gateway decided on a stream whose headers went: sent as its trailers. */
const STATUS_OVERRIDES = new WeakMap<ServerHttp2Stream, OutgoingHttpHeaders>();

/**
 * Relays an admitted call; resolves when it has ended on both sides (its ticket has then ended).
 * The bytes the gateway decided on go first, then the rest of the caller's stream; the upstream's
 * headers (plus `RateLimit`), messages (read on the side for task states) and trailers come back.
 * The caller leaving cancels the upstream stream; the deadline is passed on as what is left of it
 * and enforced here too. An unreachable or silent upstream is UNAVAILABLE (`AGENT_UNAVAILABLE`);
 * its own RESOURCE_EXHAUSTED / UNAVAILABLE with a delay becomes our rejection (a unary call's
 * headers wait for its first message, so a refusal sent as headers then trailers is caught too).
 * With `rewriteAnswer` (the extended card) the one answer message is read whole, bounded.
 *
 * @example
 * ```ts
 * await relayGrpcCall(host, { stream, headers, path, method, frame, clientEnded, deadlineAtMs, ticket, scope });
 * ```
 */
export function relayGrpcCall(host: GrpcRelayHost, call: GrpcCallToRelay): Promise<void> {
  const { stream, ticket, scope } = call;
  return new Promise<void>((resolve) => {
    let finished = false;
    let responded = false;
    let trailers: IncomingHttpHeaders | undefined;
    let last: TaskSighting | undefined;
    const timers: NodeJS.Timeout[] = [];
    const finish = (): void => {
      if (finished) return;
      finished = true;
      for (const t of timers) clearTimeout(t);
      ticket.end();
      if (last?.kind === 'task' && host.watch.watching(last.taskId))
        host.running(last.taskId, call);
      resolve();
    };
    const remainingMs =
      call.deadlineAtMs === undefined ? undefined : call.deadlineAtMs - Date.now();
    if (remainingMs !== undefined && remainingMs <= 0) {
      sendGrpcStatus(stream, 4, 'Deadline Exceeded');
      finish();
      return;
    }
    const unavailable = (why: string): void => {
      if (responded) {
        sendGrpcStatus(stream, 14, `the agent behind this gateway failed mid-call (${why})`);
        return;
      }
      const rejection = unavailableRejection(call.method, host.unavailableRetryAfterMs, why);
      host.unavailable(scope, call.method, rejection.retryAfterMs);
      const encoded = host.limiter.encodeGrpc(rejection);
      sendGrpcStatus(stream, encoded.code, encoded.message, encoded.trailers);
    };
    let up: ReturnType<GrpcUpstream['request']>;
    try {
      up = host.upstream.request(
        forwardGrpcHeaders(call.headers, remainingMs, stream.session?.socket.remoteAddress),
        call.path,
      );
    } catch (error) {
      unavailable((error as Error).message);
      finish();
      return;
    }
    const cancelUpstream = (): void => {
      if (!up.closed && !up.destroyed) up.close(constants.NGHTTP2_CANCEL);
    };
    // No headers from the upstream in time: it is unavailable.
    timers.push(
      setTimeout(() => {
        if (responded) return;
        cancelUpstream();
        unavailable(`no answer within ${host.upstreamTimeoutMs} ms`);
      }, host.upstreamTimeoutMs),
    );
    if (remainingMs !== undefined) {
      timers.push(
        setTimeout(() => {
          cancelUpstream();
          sendGrpcStatus(stream, 4, 'Deadline Exceeded');
        }, remainingMs),
      );
    }

    // The caller's side: the one message decided, nothing after it (A2A methods take one; a
    // second message would reach the agent undecided, so the call is refused instead).
    up.end(call.frame);
    if (!call.clientEnded && !stream.readableEnded) {
      stream.on('data', (chunk: Buffer) => {
        if (chunk.length === 0) return;
        cancelUpstream();
        sendGrpcStatus(stream, 3, `${call.method} takes one request message`);
      });
      stream.resume();
    }
    // The caller left (RST_STREAM, connection gone) before the upstream ended: cancel it there.
    stream.on('close', () => {
      cancelUpstream();
      finish();
    });
    stream.on('error', () => undefined);

    // The upstream's side.
    const shape = GRPC_OBSERVED[call.method];
    const reader = new GrpcFrameReader(host.maxObservedAnswerBytes);
    let encoding: string | undefined;
    let upHeaders: IncomingHttpHeaders = {};
    // A unary call's headers, held until its message or its status (then a refusal can replace them).
    let pending: OutgoingHttpHeaders | undefined;
    // The answer held whole to be rewritten (`rewriteAnswer`), while within the bound.
    let held: Buffer[] | undefined = call.rewriteAnswer === undefined ? undefined : [];
    let heldBytes = 0;
    let replaced = false;
    const flushHeaders = (): void => {
      if (pending === undefined) return;
      const out = pending;
      pending = undefined;
      if (!stream.closed && !stream.destroyed && !stream.headersSent)
        stream.respond(out, { waitForTrailers: true });
    };
    /** The upstream's refusal with a delay, answered as our rejection; true when it was. */
    const refuseAsOurs = (fields: IncomingHttpHeaders): boolean => {
      const rejection = grpcUpstreamRejection(call.method, fields, host.limiter.clock.nowMs());
      if (rejection === undefined) return false;
      host.refused({
        caller: scope.caller,
        method: call.method,
        binding: 'grpc',
        status: rejection.kind === 'quota' ? 429 : 503,
        policy: rejection.policy,
        retryAfterMs: rejection.retryAfterMs,
        reason: rejection.reason ?? REASONS[rejection.kind],
        ...(scope.tenant === undefined ? {} : { tenant: scope.tenant }),
      });
      const encoded = host.limiter.encodeGrpc(rejection);
      replaced = true;
      pending = undefined;
      held = undefined;
      sendGrpcStatus(stream, encoded.code, encoded.message, encoded.trailers);
      return true;
    };
    /** Sends the held answer on: rewritten when it is one whole message and the call succeeded. */
    const releaseHeld = (): void => {
      if (held === undefined) return;
      const all = Buffer.concat(held);
      held = undefined;
      let out: Uint8Array = all;
      if (call.rewriteAnswer !== undefined && String(trailers?.['grpc-status']) === '0') {
        const whole = new GrpcFrameReader(host.maxObservedAnswerBytes);
        const frames = whole.push(all);
        const [frame] = frames;
        const bytes =
          frame === undefined || frames.length !== 1 || whole.buffered !== 0
            ? undefined
            : messageBytes(frame, encoding, host.maxObservedAnswerBytes);
        const rewritten = bytes === undefined ? undefined : call.rewriteAnswer(bytes);
        if (rewritten !== undefined) out = grpcFrame(rewritten);
      }
      if (out.length === 0 || stream.closed || stream.destroyed || stream.writableEnded) return;
      flushHeaders();
      stream.write(out);
    };
    up.on('response', (headers, flags) => {
      if (stream.closed || stream.destroyed) return;
      responded = true;
      upHeaders = headers;
      const out: OutgoingHttpHeaders = {
        ...relayedHeaders(headers),
        ...ticket.headers,
        ':status': headers[':status'] ?? 200,
      };
      const enc = headers['grpc-encoding'];
      encoding = typeof enc === 'string' ? enc : undefined;
      if ((flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0) {
        // Trailers-Only: the status is in these headers.
        if (!refuseAsOurs(headers)) {
          stream.respond(out, { endStream: true });
          closeWhenAnswered(stream);
        }
        return;
      }
      if (!STREAMING.has(call.method)) pending = out;
      else stream.respond(out, { waitForTrailers: true });
    });
    stream.on('wantTrailers', () => {
      closeWhenAnswered(stream);
      const decided = STATUS_OVERRIDES.get(stream);
      if (decided !== undefined) {
        stream.sendTrailers(decided);
        return;
      }
      const fields = trailers === undefined ? undefined : relayedHeaders(trailers);
      if (fields !== undefined && fields['grpc-status'] !== undefined) stream.sendTrailers(fields);
      else
        stream.sendTrailers({
          'grpc-status': '14',
          'grpc-message': 'the agent ended the call without a status',
        });
    });
    up.on('data', (chunk: Buffer) => {
      if (shape !== undefined) {
        for (const frame of reader.push(chunk)) {
          const bytes = messageBytes(frame, encoding, host.maxObservedAnswerBytes);
          const sighting = bytes === undefined ? undefined : grpcSightingOf(shape, bytes);
          if (sighting === undefined) continue;
          if (sighting.kind === 'message') {
            // The admission was answered with a Message: kept for its copies (and its usage).
            if (last === undefined) host.watch.message(scope, sighting.message);
            last = sighting;
            continue;
          }
          // The first sighting binds the admission; later ones only report states.
          host.watch.task(
            last === undefined ? scope : undefined,
            sighting.taskId,
            sighting.state,
            sighting.object,
          );
          last = sighting;
        }
      }
      if (stream.closed || stream.destroyed || stream.writableEnded || replaced) return;
      let out = chunk;
      if (held !== undefined) {
        held.push(chunk);
        heldBytes += chunk.length;
        if (heldBytes <= host.maxObservedAnswerBytes + GRPC_PREFIX_BYTES) return;
        // Too large to rewrite: sent on as it came.
        out = Buffer.concat(held);
        held = undefined;
      }
      flushHeaders();
      if (!stream.write(out)) up.pause();
    });
    stream.on('drain', () => up.resume());
    up.on('trailers', (headers) => {
      trailers = headers;
      if (stream.closed || stream.destroyed || replaced) return;
      // Headers, no message, then a refusal in the trailers.
      if (pending !== undefined && heldBytes === 0 && refuseAsOurs({ ...upHeaders, ...headers }))
        return;
      releaseHeld();
      flushHeaders();
    });
    up.on('end', () => {
      if (!responded || replaced || stream.closed || stream.destroyed) return;
      releaseHeld();
      flushHeaders();
      if (stream.headersSent && !stream.writableEnded) stream.end();
    });
    up.on('error', (error: Error & { code?: string }) => {
      if (!responded) unavailable(error.code ?? error.message);
    });
    up.on('close', () => {
      const open = !stream.closed && !stream.destroyed;
      if (!responded && open && !stream.headersSent) {
        unavailable(`the upstream stream closed (HTTP/2 code ${up.rstCode ?? 0})`);
      } else if (
        responded &&
        !replaced &&
        trailers === undefined &&
        open &&
        !stream.writableEnded
      ) {
        if (!stream.headersSent) {
          // Reset before its headers went on: nothing of the answer was sent.
          pending = undefined;
          held = undefined;
          unavailable(`the upstream stream closed (HTTP/2 code ${up.rstCode ?? 0})`);
        } else stream.end(); // Reset mid-answer: the wantTrailers handler sends UNAVAILABLE.
      }
      if (stream.closed || stream.destroyed || stream.writableEnded) {
        if (stream.closed) finish();
        else stream.once('close', finish);
      }
    });
  });
}
