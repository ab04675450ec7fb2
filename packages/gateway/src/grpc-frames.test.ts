import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { GrpcFrameReader, grpcFrame, messageBytes } from './grpc-frames.js';

const bytes = (...values: number[]) => Buffer.from(values);

describe('GrpcFrameReader', () => {
  it('reads a whole frame, and several in one chunk', () => {
    const reader = new GrpcFrameReader(100);
    const chunk = Buffer.concat([
      grpcFrame(bytes(1, 2, 3)),
      grpcFrame(bytes()),
      grpcFrame(bytes(9)),
    ]);
    const frames = reader.push(chunk);
    expect(frames.map((f) => [...(f.message ?? [])])).toEqual([[1, 2, 3], [], [9]]);
    expect(frames.every((f) => !f.compressed)).toBe(true);
    expect(reader.buffered).toBe(0);
  });

  it('reads a frame split at every byte, the prefix included', () => {
    const frame = Buffer.concat([grpcFrame(bytes(5, 6, 7, 8)), grpcFrame(bytes(1))]);
    const reader = new GrpcFrameReader(100);
    const seen: number[][] = [];
    for (const b of frame) {
      for (const f of reader.push(bytes(b))) seen.push([...(f.message ?? [])]);
    }
    expect(seen).toEqual([[5, 6, 7, 8], [1]]);
  });

  it('reports an oversize message once its prefix is read, skips it, and reads the next', () => {
    const reader = new GrpcFrameReader(3);
    const big = grpcFrame(bytes(1, 2, 3, 4, 5, 6));
    const first = reader.push(big.subarray(0, 7));
    expect(first).toEqual([{ compressed: false, length: 6, message: undefined }]);
    expect(reader.buffered).toBe(0);
    const rest = reader.push(Buffer.concat([big.subarray(7), grpcFrame(bytes(7, 8))]));
    expect(rest.map((f) => [...(f.message ?? [])])).toEqual([[7, 8]]);
  });

  it('keeps the compressed flag, and decompresses gzip with a bound', () => {
    const text = Buffer.from('hello hello hello');
    const zipped = gzipSync(text);
    const frame = Buffer.from(grpcFrame(zipped));
    frame[0] = 1;
    const [read] = new GrpcFrameReader(1000).push(frame);
    expect(read?.compressed).toBe(true);
    expect(messageBytes(read as never, 'gzip', 1000)?.toString()).toBe('hello hello hello');
    expect(messageBytes(read as never, 'gzip', 4)).toBeUndefined();
    expect(messageBytes(read as never, 'snappy', 1000)).toBeUndefined();
  });
});
