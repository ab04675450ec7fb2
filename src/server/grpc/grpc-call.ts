/**
 * @module server/grpc/grpc-call
 * One gRPC call on its way through the admission pipeline: what the limiter is asked, and the
 * call's own state and ways to end.
 */

import * as http2 from 'node:http2';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import * as grpc from '@grpc/grpc-js';
import type { A2AMethod } from '../../core/a2a-methods.js';
import type { PipelineCall } from '../admission-pipeline.js';
import type { AdmissionTicket } from '../limiter-api.js';
import type { WriteWatch } from '../write-watch.js';
import type { EncodedRequest, ScannedFields } from './encoded-request.js';

/**
 * The HTTP/2 stream under a server call: grpc-js keeps it on its base call (`stream`), under any
 * interceptors that come before ours (`nextCall`). Undefined when this grpc-js keeps it elsewhere.
 */
function http2StreamOf(
  call: grpc.ServerInterceptingCallInterface,
): http2.ServerHttp2Stream | undefined {
  let c: unknown = call;
  for (let depth = 0; depth < 16 && typeof c === 'object' && c !== null; depth++) {
    const stream = (c as { stream?: Partial<http2.ServerHttp2Stream> }).stream;
    if (typeof stream?.close === 'function' && typeof stream.writableLength === 'number') {
      return stream as http2.ServerHttp2Stream;
    }
    c = (c as { nextCall?: unknown }).nextCall;
  }
  return undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The fields of an A2A request message the admission reads. */
interface RequestFields {
  readonly tenant?: unknown;
  readonly message?: { readonly messageId?: unknown };
  readonly request?: { readonly messageId?: unknown };
}

/** One intercepted A2A call: created when it starts, filled in as metadata and message arrive. */
export class GrpcCall implements PipelineCall {
  caller = '';
  skill: string | undefined = undefined;
  readonly binding = 'grpc' as const;
  /** gRPC has no v0.3 answer forms: a duplicate stream of a running task is resubscribed. */
  readonly legacy = false;
  tenant: string | undefined = undefined;
  messageId: string | undefined = undefined;
  /** The incoming metadata (the SDK reads the same object after us). */
  metadata = new grpc.Metadata();
  /** The request message, once received (and decoded). */
  message: unknown = undefined;
  /** The request message still encoded: decided on {@link GrpcCall.receiveEncoded}'s fields. */
  encoded: EncodedRequest | undefined = undefined;
  /** Hands the request message on to the SDK. */
  forward: (message: unknown) => void = () => undefined;
  /** The admission's ticket, ended with the call. */
  ticket: AdmissionTicket | undefined = undefined;
  /** A status has gone out (or the call was cancelled): nothing more is sent or run. */
  done = false;
  /** A duplicate stream's resubscription, once its task is found: what it streams. */
  resubscription: { readonly taskId: string; readonly context: ServerCallContext } | undefined =
    undefined;
  /** Stops a resubscription stream we run ourselves. */
  abort: (() => void) | undefined = undefined;
  /** Response messages handed on to be written (progress of the write deadline). */
  writes = 0;
  /** Stops watching the call's writes (see `WriteWatch`). */
  unwatch: (() => void) | undefined = undefined;

  constructor(
    readonly call: grpc.ServerInterceptingCallInterface,
    readonly method: A2AMethod,
  ) {}

  /** Takes the request message: its tenant and (for a message method) its messageId. */
  receive(message: unknown, forward: (message: unknown) => void): void {
    const request = (message ?? {}) as RequestFields;
    this.message = message;
    this.forward = forward;
    this.tenant = text(request.tenant);
    this.messageId =
      this.method === 'SendMessage' || this.method === 'SendStreamingMessage'
        ? text(request.message?.messageId ?? request.request?.messageId)
        : undefined;
  }

  /**
   * Takes a request message left encoded, with the fields a scan of it read: it is decoded only
   * once admitted ({@link GrpcCall.decodeAdmitted}).
   */
  receiveEncoded(
    encoded: EncodedRequest,
    fields: ScannedFields,
    forward: (message: unknown) => void,
  ): void {
    this.encoded = encoded;
    this.forward = forward;
    this.tenant = fields.tenant;
    this.messageId =
      this.method === 'SendMessage' || this.method === 'SendStreamingMessage'
        ? fields.messageId
        : undefined;
  }

  /**
   * Decodes the message of an admitted call taken encoded, and checks that it says what the
   * decision read (tenant, messageId). Undefined when it did; else why not.
   */
  decodeAdmitted(): string | undefined {
    const encoded = this.encoded;
    if (encoded === undefined) return undefined;
    this.encoded = undefined;
    let message: unknown;
    try {
      message = encoded.decode();
    } catch {
      return 'Error deserializing request';
    }
    const { tenant, messageId } = this;
    this.receive(message, this.forward);
    if (this.tenant !== tenant || this.messageId !== messageId) {
      return 'the request decoded differs from the request the decision read';
    }
    return undefined;
  }

  /** The call is over: the ticket ends, a stream of ours stops. */
  finish(): void {
    this.done = true;
    this.ticket?.end();
    this.abort?.();
    this.unwatch?.();
  }

  /**
   * Watches the call's response writes: one that does not complete within the watch's deadline
   * ends the call (its ticket, so its leases) and resets its HTTP/2 stream.
   */
  watchWrites(watch: WriteWatch): void {
    const stream = http2StreamOf(this.call);
    if (stream === undefined || this.unwatch !== undefined) return;
    this.unwatch = watch.add({
      pending: () => stream.writableLength > 0,
      progress: () => this.writes,
      expire: () => {
        this.unwatch = undefined;
        this.finish();
        if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      },
    });
  }

  /** Ends the call with an error status of ours (once). */
  fail(code: grpc.status, details: string): void {
    if (this.done) return;
    this.finish();
    this.call.sendStatus({ code, details, metadata: new grpc.Metadata() });
  }

  /** Ends a call we answered ourselves with OK (once). */
  succeed(): void {
    if (this.done) return;
    this.done = true;
    this.call.sendStatus({ code: grpc.status.OK, details: 'OK', metadata: new grpc.Metadata() });
  }

  /** Sends one response message; resolves once it is written. */
  send(message: unknown): Promise<void> {
    return new Promise((resolve) => this.call.sendMessage(message, resolve));
  }
}
