/**
 * @module grpc-gateway
 * The gateway's gRPC listener: each call decided before the upstream sees a byte, then relayed.
 */

import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { A2AMethod } from 'a2a-ratelimit';
import { grpcMethodOf, readGrpcRequestFields } from 'a2a-ratelimit/server';
import { callerGrpcExtendedCard } from './extended-card.js';
import type { IdentifyRequest } from './gateway-options.js';
import { identityRequest, readFirstMessage } from './grpc-call-start.js';
import { grpcFrame, messageBytes, READABLE_ENCODINGS } from './grpc-frames.js';
import { encodeGrpcMessage, wrapMessage } from './grpc-message.js';
import {
  closeWhenAnswered,
  type GrpcCallToRelay,
  type GrpcRelayHost,
  relayGrpcCall,
  sendGrpcStatus,
} from './grpc-relay.js';
import { encodeGetTaskRequest, grpcWebhookUrls, wrapTask } from './grpc-sightings.js';
import { forwardGrpcHeaders, grpcTimeoutMs, unaryCall } from './grpc-upstream.js';
import { encodeGrpcUnauthenticated } from './identity/unauthenticated-response.js';
import { bindingTicket } from './task-watch.js';
import { unavailableRejection } from './upstream-failure.js';

/** The gRPC service the gateway relays. */
export const GRPC_SERVICE_PREFIX = '/lf.a2a.v1.A2AService/';

/** gRPC status codes the gateway answers with itself. */
const CODE = {
  invalidArgument: 3,
  deadlineExceeded: 4,
  alreadyExists: 6,
  resourceExhausted: 8,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
} as const;

/** What the gRPC listener needs from its gateway. */
export interface GrpcGatewayHost extends GrpcRelayHost {
  readonly identify: IdentifyRequest;
  /** Whether the upstream's card has been fetched (and why not). */
  readonly ready: () => boolean;
  readonly cardError: () => string | undefined;
  /** Largest request message read, bytes. */
  readonly maxMessageBytes: number;
  /** How long a call's request message may take to arrive, ms. */
  readonly readTimeoutMs: number;
  /** Why a webhook URL is refused, or undefined when all pass (or checks are off). */
  readonly checkWebhooks: (urls: readonly string[]) => Promise<string | undefined>;
  /** The gateway's public base URL and gRPC target (the caller's extended card names them). */
  readonly publicBase: () => string;
  readonly grpcPublicTarget: () => string | undefined;
  /** Counts a call in flight; the function returned ends it. */
  readonly begin: () => () => void;
  readonly log: (line: string) => void;
}

/**
 * The gRPC listener of a gateway: give it to an `http2` server's `stream` event. The method comes
 * from `:path` (anything but `/lf.a2a.v1.A2AService/<rpc>` is UNIMPLEMENTED, never forwarded); the
 * first request message is read bounded (larger is RESOURCE_EXHAUSTED, as in-process) for its
 * tenant and messageId; the caller is identified (a refusal is UNAUTHENTICATED), webhooks checked,
 * and the limiter decides. A rejection is the limiter's gRPC encoding; a copy of an admitted
 * message gets the first copy's task or Message without reaching the upstream again.
 *
 * @example
 * ```ts
 * http2.createServer().on('stream', createGrpcHandler(host)).listen(50051, '127.0.0.1');
 * ```
 */
export function createGrpcHandler(
  host: GrpcGatewayHost,
): (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void {
  const limiter = host.limiter;
  const unavailableStatus = (stream: ServerHttp2Stream, method: A2AMethod, why: string): void => {
    const encoded = limiter.encodeGrpc(
      unavailableRejection(method, host.unavailableRetryAfterMs, why),
    );
    sendGrpcStatus(stream, encoded.code, encoded.message, encoded.trailers);
  };

  const handle = async (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> => {
    const path = String(headers[':path'] ?? '');
    const method = path.startsWith(GRPC_SERVICE_PREFIX) ? grpcMethodOf(path) : undefined;
    const type = String(headers['content-type'] ?? '');
    if (headers[':method'] !== 'POST' || !/^application\/grpc(\+proto)?(;|$)/.test(type)) {
      stream.respond({ ':status': 415, 'content-type': 'text/plain' }, { endStream: true });
      closeWhenAnswered(stream);
      return;
    }
    if (method === undefined) {
      sendGrpcStatus(stream, CODE.unimplemented, `${path} is not a method of lf.a2a.v1.A2AService`);
      return;
    }
    if (!host.ready() || host.upstream.target === undefined) {
      const why = !host.ready()
        ? `its card could not be fetched: ${host.cardError() ?? 'not yet fetched'}`
        : 'its card lists no gRPC interface';
      if (host.ready())
        sendGrpcStatus(
          stream,
          CODE.unimplemented,
          `the agent behind this gateway has no gRPC interface`,
        );
      else unavailableStatus(stream, method, why);
      return;
    }
    const encoding =
      typeof headers['grpc-encoding'] === 'string' ? headers['grpc-encoding'] : 'identity';
    if (!READABLE_ENCODINGS.has(encoding)) {
      sendGrpcStatus(stream, CODE.unimplemented, `grpc-encoding ${encoding} is not accepted`, {
        'grpc-accept-encoding': [...READABLE_ENCODINGS].join(','),
      });
      return;
    }
    const timeoutMs = grpcTimeoutMs(headers['grpc-timeout']);
    const deadlineAtMs = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    const deadline =
      timeoutMs === undefined
        ? undefined
        : setTimeout(
            () => sendGrpcStatus(stream, CODE.deadlineExceeded, 'Deadline Exceeded'),
            timeoutMs,
          );
    try {
      await decide(stream, headers, path, method, encoding, deadlineAtMs, () =>
        clearTimeout(deadline),
      );
    } finally {
      clearTimeout(deadline);
    }
  };

  const decide = async (
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    path: string,
    method: A2AMethod,
    encoding: string,
    deadlineAtMs: number | undefined,
    stopDeadline: () => void,
  ): Promise<void> => {
    const gone = (): boolean => stream.closed || stream.destroyed || stream.headersSent;
    const first = await readFirstMessage(stream, host.maxMessageBytes, host.readTimeoutMs);
    if (gone()) return;
    if (first.kind === 'too-slow') {
      sendGrpcStatus(
        stream,
        CODE.deadlineExceeded,
        `the request message did not arrive within ${host.readTimeoutMs} ms`,
      );
      return;
    }
    if (first.kind === 'too-large') {
      sendGrpcStatus(
        stream,
        CODE.resourceExhausted,
        `message too large: ${first.size} bytes, the limit is ${host.maxMessageBytes}`,
      );
      return;
    }
    if (first.kind === 'none') {
      sendGrpcStatus(stream, CODE.invalidArgument, 'the call carried no request message');
      return;
    }
    // Only the decided message may reach the agent: a second one in the same call is refused.
    if (first.extra) {
      sendGrpcStatus(stream, CODE.invalidArgument, `${method} takes one request message`);
      return;
    }
    const bytes = messageBytes(
      { compressed: first.compressed, length: first.message.length, message: first.message },
      encoding,
      host.maxMessageBytes,
    );
    const fields = bytes === undefined ? undefined : readGrpcRequestFields(method, bytes);
    const webhooks = bytes === undefined ? undefined : grpcWebhookUrls(method, bytes);
    if (bytes === undefined || fields === undefined || webhooks === undefined) {
      sendGrpcStatus(stream, CODE.invalidArgument, `the ${method} request message cannot be read`);
      return;
    }
    const identity = await host.identify(identityRequest(stream, headers));
    if (gone()) return;
    const refusal = (caller: string, status: number, policy: string, retryAfterMs?: number): void =>
      host.refused({
        caller,
        method,
        binding: 'grpc',
        status,
        policy,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    if ('unauthenticated' in identity) {
      const failure = identity.unauthenticated;
      refusal('', failure.reason === 'jwks-unavailable' ? 503 : 401, 'identity');
      if (failure.reason === 'jwks-unavailable') {
        sendGrpcStatus(stream, CODE.unavailable, failure.message, { 'retry-after': '1' });
      } else {
        const encoded = encodeGrpcUnauthenticated(failure, { domain: limiter.domain });
        sendGrpcStatus(stream, encoded.code, encoded.message, encoded.trailers);
      }
      return;
    }
    // A claim the caller is not believed on never reaches the agent (which may believe it).
    for (const name of identity.unbelievedHeaders ?? []) delete headers[name];
    const outcome = await limiter.admit({
      caller: identity.caller,
      method,
      binding: 'grpc',
      ...(identity.tier === undefined ? {} : { tier: identity.tier }),
      ...(fields.tenant === undefined ? {} : { tenant: fields.tenant }),
      ...(fields.messageId === undefined ? {} : { messageId: fields.messageId }),
    });
    if (outcome.status === 'rejected') {
      const encoded = limiter.encodeGrpc(outcome.rejection, outcome.limits);
      refusal(
        identity.caller,
        encoded.code === CODE.resourceExhausted ? 429 : 503,
        outcome.rejection.policy,
        outcome.rejection.retryAfterMs,
      );
      sendGrpcStatus(stream, encoded.code, encoded.message, encoded.trailers);
      return;
    }
    if (outcome.status === 'duplicate') {
      await answerDuplicate(
        stream,
        headers,
        method,
        fields,
        outcome.taskId,
        outcome.answer?.message,
      );
      return;
    }
    // Push URLs are checked once admitted (as the agent's push store checks them in-process): a
    // refused caller's URLs cost no DNS lookup.
    if (webhooks.length > 0) {
      let why: string | undefined;
      try {
        why = await host.checkWebhooks(webhooks);
      } catch (error) {
        outcome.ticket.end();
        throw error;
      }
      if (why !== undefined) {
        outcome.ticket.end();
        if (gone()) return;
        refusal(identity.caller, 400, 'webhook');
        sendGrpcStatus(stream, CODE.invalidArgument, `push notification URL refused: ${why}`);
        return;
      }
    }
    stopDeadline();
    if (gone()) {
      outcome.ticket.end();
      return;
    }
    const call: GrpcCallToRelay = {
      stream,
      headers,
      path,
      method,
      frame: grpcFrame(bytes),
      clientEnded: first.ended,
      deadlineAtMs,
      ticket: outcome.ticket,
      scope: {
        ticketId: bindingTicket(method, outcome.ticket),
        tenant: fields.tenant,
        caller: identity.caller,
      },
      // The caller's extended card shows its own tier and limits.
      rewriteAnswer:
        method === 'GetExtendedAgentCard'
          ? (message: Buffer) =>
              callerGrpcExtendedCard(
                message,
                limiter,
                identity,
                host.publicBase(),
                host.grpcPublicTarget(),
              )
          : undefined,
    };
    await relayGrpcCall(host, call);
  };

  /** Answers a copy with one message (a wrapped Task or Message) and status OK. */
  const answerWith = (stream: ServerHttp2Stream, message: Uint8Array): void => {
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc' },
      { waitForTrailers: true },
    );
    stream.once('wantTrailers', () => {
      stream.sendTrailers({ 'grpc-status': '0' });
      closeWhenAnswered(stream);
    });
    stream.end(grpcFrame(message));
  };

  /**
   * A retried copy: the first copy's task (GetTask on the upstream, this copy's credentials), or
   * the Message the first copy was answered with.
   */
  const answerDuplicate = async (
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    method: A2AMethod,
    fields: { readonly tenant: string | undefined; readonly messageId: string | undefined },
    taskId: string | undefined,
    message: unknown,
  ): Promise<void> => {
    const kept = taskId === undefined ? encodeGrpcMessage(message) : undefined;
    if (kept !== undefined) {
      answerWith(stream, wrapMessage(kept));
      return;
    }
    if (taskId === undefined) {
      sendGrpcStatus(
        stream,
        CODE.alreadyExists,
        `Message ${fields.messageId ?? ''} was already received and processed without creating a task; it is not run again`,
      );
      return;
    }
    const found = await unaryCall(
      host.upstream,
      `${GRPC_SERVICE_PREFIX}GetTask`,
      forwardGrpcHeaders(headers, undefined, stream.session?.socket.remoteAddress),
      encodeGetTaskRequest(taskId, fields.tenant),
      host.upstreamTimeoutMs,
    );
    if (stream.closed || stream.destroyed) return;
    if (found.code !== 0 || found.message === undefined) {
      unavailableStatus(stream, method, 'the first copy’s task could not be read');
      return;
    }
    answerWith(stream, wrapTask(found.message));
  };

  return (stream, headers) => {
    const end = host.begin();
    stream.on('error', () => undefined);
    stream.once('close', end);
    handle(stream, headers).catch((error: unknown) => {
      host.log(`a2a-ratelimit gateway (gRPC): ${(error as Error).stack ?? String(error)}`);
      sendGrpcStatus(stream, CODE.internal, 'the gateway could not decide this call');
    });
  };
}
