/**
 * @module grpc-frames
 * gRPC's length-prefixed messages read from an HTTP/2 byte stream as it arrives, and the one frame
 * the gateway writes itself. Pure.
 */

import { gunzipSync, inflateSync } from 'node:zlib';

/** One message read from the stream. */
export interface GrpcFrame {
  /** The compressed flag (the message is in the stream's `grpc-encoding`). */
  readonly compressed: boolean;
  /** The message's length, bytes. */
  readonly length: number;
  /** The message bytes; undefined when the message was larger than the reader's bound. */
  readonly message: Buffer | undefined;
}

/** The 5-byte prefix of a gRPC message. */
export const GRPC_PREFIX_BYTES = 5;

/**
 * Splits a gRPC byte stream into messages. `push` returns the messages completed by a chunk; a
 * message longer than `maxMessageBytes` is returned with no bytes once its prefix is read, and its
 * bytes are skipped as they arrive.
 *
 * @example
 * ```ts
 * const reader = new GrpcFrameReader(1 << 20);
 * for (const frame of reader.push(chunk)) console.log(frame.length);
 * ```
 */
export class GrpcFrameReader {
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes of an oversize message still to skip. */
  private skipping = 0;

  constructor(private readonly maxMessageBytes: number) {}

  /** Bytes received and not yet part of a completed message. */
  get buffered(): number {
    return this.pendingBytes;
  }

  /** Reads a chunk; returns the messages it completed, in order. */
  push(chunk: Uint8Array): GrpcFrame[] {
    const frames: GrpcFrame[] = [];
    let data = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (;;) {
      if (this.skipping > 0) {
        const n = Math.min(this.skipping, data.length);
        this.skipping -= n;
        data = data.subarray(n);
      }
      if (data.length === 0) break;
      this.pending.push(data);
      this.pendingBytes += data.length;
      data = Buffer.alloc(0);
      if (this.pendingBytes < GRPC_PREFIX_BYTES) break;
      const head = this.joined();
      const compressed = head[0] !== 0;
      const length = head.readUInt32BE(1);
      if (length > this.maxMessageBytes) {
        frames.push({ compressed, length, message: undefined });
        this.clear();
        this.skipping = length;
        data = head.subarray(GRPC_PREFIX_BYTES);
        continue;
      }
      if (head.length < GRPC_PREFIX_BYTES + length) break;
      const end = GRPC_PREFIX_BYTES + length;
      frames.push({
        compressed,
        length,
        message: Buffer.from(head.subarray(GRPC_PREFIX_BYTES, end)),
      });
      this.clear();
      data = head.subarray(end);
    }
    return frames;
  }

  private joined(): Buffer {
    if (this.pending.length > 1) {
      const all = Buffer.concat(this.pending);
      this.pending.length = 0;
      this.pending.push(all);
    }
    return this.pending[0] as Buffer;
  }

  private clear(): void {
    this.pending.length = 0;
    this.pendingBytes = 0;
  }
}

/**
 * One uncompressed gRPC message frame around `message`.
 *
 * @example
 * ```ts
 * stream.write(grpcFrame(taskAnswerBytes));
 * ```
 */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(GRPC_PREFIX_BYTES + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, GRPC_PREFIX_BYTES);
  return frame;
}

/** The `grpc-encoding` values whose messages the gateway can read. */
export const READABLE_ENCODINGS: ReadonlySet<string> = new Set(['identity', 'gzip', 'deflate']);

/**
 * The bytes of a frame's message, decompressed with `encoding` when flagged compressed (at most
 * `maxBytes` out); undefined when it cannot be read (skipped, an unknown encoding, bad data, too
 * large once decompressed).
 *
 * @example
 * ```ts
 * const bytes = messageBytes(frame, headers['grpc-encoding'], 1 << 20);
 * ```
 */
export function messageBytes(
  frame: GrpcFrame,
  encoding: string | undefined,
  maxBytes: number,
): Buffer | undefined {
  if (frame.message === undefined) return undefined;
  if (!frame.compressed) return frame.message;
  try {
    if (encoding === 'gzip') return gunzipSync(frame.message, { maxOutputLength: maxBytes });
    if (encoding === 'deflate') return inflateSync(frame.message, { maxOutputLength: maxBytes });
  } catch {
    return undefined;
  }
  return undefined;
}
