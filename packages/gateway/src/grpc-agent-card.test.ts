import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { describe, expect, it } from 'vitest';
import { rewriteGrpcAgentCard } from './grpc-agent-card.js';
import { decodeStruct, encodeStruct } from './grpc-struct.js';

const RL = 'https://a2a-ratelimit.dev/ext/rate-limits/v1';

function ext(uri: string, params?: Record<string, unknown>): Uint8Array {
  const w = new BinaryWriter().tag(1, WireType.LengthDelimited).string(uri);
  if (params !== undefined)
    w.tag(4, WireType.LengthDelimited).bytes(encodeStruct(params) as Uint8Array);
  return w.finish();
}

/** Fields of a message as [number, bytes-or-varint] pairs. */
function fields(bytes: Uint8Array): [number, Uint8Array | bigint | number][] {
  const r = new BinaryReader(bytes);
  const out: [number, Uint8Array | bigint | number][] = [];
  while (r.pos < r.len) {
    const [n, t] = r.tag();
    out.push([n, t === WireType.LengthDelimited ? r.bytes() : r.int32()]);
  }
  return out;
}

const text = (b: unknown): string => new TextDecoder().decode(b as Uint8Array);

describe('rewriteGrpcAgentCard', () => {
  it('replaces interface URLs and the rate-limit extension, keeping every other byte', () => {
    const iface = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string('up:50051')
      .tag(2, WireType.LengthDelimited)
      .string('GRPC')
      .tag(3, WireType.LengthDelimited)
      .string('tenant-a')
      .finish();
    const caps = new BinaryWriter()
      .tag(1, WireType.Varint)
      .bool(true)
      .tag(3, WireType.LengthDelimited)
      .bytes(ext('https://other/v1', { a: 1 }))
      .tag(3, WireType.LengthDelimited)
      .bytes(ext(RL, { stale: true }))
      .finish();
    const card = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string('agent')
      .tag(3, WireType.LengthDelimited)
      .bytes(iface)
      .tag(7, WireType.LengthDelimited)
      .bytes(caps)
      .tag(99, WireType.Varint)
      .int32(7)
      .finish();
    const params = { callerTier: 'pro', policies: [{ name: 'p', limit: 5, on: true, x: null }] };
    const out = rewriteGrpcAgentCard(card, {
      interfaceUrls: (is) => is.map((i) => `${i.protocolBinding}:gw:1`),
      extension: { uri: RL, params },
    }) as Uint8Array;
    const top = fields(out);
    expect(top.map(([n]) => n)).toEqual([1, 3, 7, 99]);
    expect(top[3]?.[1]).toBe(7);
    const newIface = fields(top[1]?.[1] as Uint8Array);
    expect(newIface.map(([n, v]) => [n, text(v)])).toEqual([
      [1, 'GRPC:gw:1'],
      [2, 'GRPC'],
      [3, 'tenant-a'],
    ]);
    const newCaps = fields(top[2]?.[1] as Uint8Array);
    expect(newCaps.map(([n]) => n)).toEqual([1, 3, 3]);
    const [other, mine] = [newCaps[1]?.[1], newCaps[2]?.[1]].map((b) => fields(b as Uint8Array));
    expect(text(other?.[0]?.[1])).toBe('https://other/v1');
    expect(decodeStruct(other?.[1]?.[1] as Uint8Array)).toEqual({ a: 1 });
    expect(text(mine?.[0]?.[1])).toBe(RL);
    expect(decodeStruct(mine?.[1]?.[1] as Uint8Array)).toEqual(params);
  });

  it('adds capabilities when the card has none; bytes that are no message give undefined', () => {
    const card = new BinaryWriter().tag(1, WireType.LengthDelimited).string('a').finish();
    const out = rewriteGrpcAgentCard(card, {
      interfaceUrls: () => [],
      extension: { uri: RL },
    }) as Uint8Array;
    expect(fields(out).map(([n]) => n)).toEqual([1, 7]);
    const bad = Uint8Array.from([0x0a, 0xff, 0x01]);
    expect(rewriteGrpcAgentCard(bad, { interfaceUrls: () => [], extension: { uri: RL } })).toBe(
      undefined,
    );
  });
});
