/**
 * @module grpc-call-start
 * The start of a gRPC call at the gateway: its first request message read (bounded), its headers
 * and socket as `identify` reads them.
 */

import type { IncomingMessage } from 'node:http';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { GrpcFrameReader } from './grpc-frames.js';

/** The first request message, and whether the caller ended its side. */
export type FirstMessage =
  | {
      readonly kind: 'message';
      readonly message: Buffer;
      readonly compressed: boolean;
      /** Bytes came after the first message (A2A methods take exactly one). */
      readonly extra: boolean;
      readonly ended: boolean;
    }
  | { readonly kind: 'too-large'; readonly size: number }
  /** Not complete within the read timeout. */
  | { readonly kind: 'too-slow' }
  | { readonly kind: 'none' };

/**
 * Reads until the first message is complete (or over the bound, or the caller ended / left, or
 * `timeoutMs` passed: a caller trickling its message, or never sending it, holds a stream no
 * longer); the stream is paused with anything after it unread.
 *
 * @example
 * ```ts
 * const first = await readFirstMessage(stream, 1 << 20, 300_000);
 * ```
 */
export function readFirstMessage(
  stream: ServerHttp2Stream,
  maxBytes: number,
  timeoutMs: number,
): Promise<FirstMessage> {
  return new Promise((resolve) => {
    const reader = new GrpcFrameReader(maxBytes);
    let settled = false;
    const timer = setTimeout(() => settle({ kind: 'too-slow' }), timeoutMs);
    const settle = (value: FirstMessage): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stream.pause();
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onEnd);
      resolve(value);
    };
    const onData = (chunk: Buffer): void => {
      const frames = reader.push(chunk);
      const [frame] = frames;
      if (frame === undefined) return;
      if (frame.message === undefined) settle({ kind: 'too-large', size: frame.length });
      else {
        settle({
          kind: 'message',
          message: frame.message,
          compressed: frame.compressed,
          extra: frames.length > 1 || reader.buffered > 0,
          ended: stream.readableEnded,
        });
      }
    };
    const onEnd = (): void => settle({ kind: 'none' });
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('close', onEnd);
  });
}

/**
 * The request's headers and socket as `identify` reads them (an `IncomingMessage`'s shape).
 *
 * @example
 * ```ts
 * const identity = await identify(identityRequest(stream, headers));
 * ```
 */
export function identityRequest(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
): IncomingMessage {
  const plain: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers))
    if (!name.startsWith(':')) plain[name] = value;
  const authority = headers[':authority'];
  if (typeof authority === 'string' && plain.host === undefined) plain.host = authority;
  return {
    headers: plain,
    socket: stream.session?.socket ?? {},
    url: headers[':path'],
    method: 'POST',
    httpVersion: '2.0',
  } as unknown as IncomingMessage;
}
