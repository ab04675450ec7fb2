/**
 * @module grpc-agent-card
 * An A2A 1.0 `AgentCard` rewritten on the wire: interface URLs and the rate-limit extension; every
 * other field copied byte for byte. Pure.
 */

import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { RATE_LIMIT_EXTENSION_URI } from 'a2a-ratelimit/server';
import { encodeStruct } from './grpc-struct.js';

/** One interface of the card as read: its URL and binding. */
export interface GrpcCardInterface {
  readonly url: string;
  readonly protocolBinding: string;
}

/** An `AgentExtension` in its JSON form. */
export interface GrpcCardExtension {
  readonly uri: string;
  readonly description?: string | undefined;
  readonly required?: boolean | undefined;
  readonly params?: Record<string, unknown> | undefined;
}

/** What to change in the card. */
export interface GrpcCardRewrite {
  /** The new URL of each interface, in the order given. */
  readonly interfaceUrls: (interfaces: readonly GrpcCardInterface[]) => readonly string[];
  /** The rate-limit extension to carry (replacing any copy). */
  readonly extension: GrpcCardExtension;
}

/** One field of a message: its number, wire type, encoded bytes (tag included) and body. */
interface RawField {
  readonly field: number;
  readonly wireType: WireType;
  readonly raw: Uint8Array;
  /** A length-delimited field's bytes. */
  readonly body: Uint8Array | undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Every field of a message, in order (throws on bytes that are not a message). */
function fieldsOf(bytes: Uint8Array): RawField[] {
  const reader = new BinaryReader(bytes);
  const out: RawField[] = [];
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const [field, wireType] = reader.tag();
    let body: Uint8Array | undefined;
    if (wireType === WireType.LengthDelimited) body = reader.bytes();
    else reader.skip(wireType, field);
    out.push({ field, wireType, raw: bytes.subarray(start, reader.pos), body });
  }
  return out;
}

/** The last string value of field `n` (proto3: the last one wins), or ''. */
function stringField(fields: readonly RawField[], n: number): string {
  let value = '';
  for (const f of fields) if (f.field === n && f.body !== undefined) value = utf8.decode(f.body);
  return value;
}

function isField(f: RawField, n: number): f is RawField & { body: Uint8Array } {
  return f.field === n && f.wireType === WireType.LengthDelimited && f.body !== undefined;
}

/** An `AgentExtension` message. */
function encodeExtension(extension: GrpcCardExtension): Uint8Array {
  const writer = new BinaryWriter();
  writer.tag(1, WireType.LengthDelimited).string(extension.uri);
  if (extension.description !== undefined && extension.description !== '')
    writer.tag(2, WireType.LengthDelimited).string(extension.description);
  if (extension.required === true) writer.tag(3, WireType.Varint).bool(true);
  if (extension.params !== undefined) {
    const params = encodeStruct(extension.params);
    if (params === undefined) throw new Error('the extension params are nested too deep');
    writer.tag(4, WireType.LengthDelimited).bytes(params);
  }
  return writer.finish();
}

/** The capabilities (every occurrence merged) with the extension in place of any copy. */
function encodeCapabilities(
  occurrences: readonly Uint8Array[],
  extension: GrpcCardExtension,
): Uint8Array {
  const writer = new BinaryWriter();
  for (const bytes of occurrences) {
    for (const f of fieldsOf(bytes)) {
      if (isField(f, 3) && stringField(fieldsOf(f.body), 1) === RATE_LIMIT_EXTENSION_URI) continue;
      writer.raw(f.raw);
    }
  }
  writer.tag(3, WireType.LengthDelimited).bytes(encodeExtension(extension));
  return writer.finish();
}

/**
 * The card's bytes rewritten: interface URLs replaced, the rate-limit extension put in place of any
 * copy; undefined when the bytes are not a message (the caller then relays them untouched).
 *
 * @example
 * ```ts
 * const out = rewriteGrpcAgentCard(bytes, { interfaceUrls: (is) => is.map((i) => i.url), extension });
 * ```
 */
export function rewriteGrpcAgentCard(
  bytes: Uint8Array,
  rewrite: GrpcCardRewrite,
): Uint8Array | undefined {
  try {
    const fields = fieldsOf(bytes);
    const interfaces = fields
      .filter((f) => isField(f, 3))
      .map((f) => fieldsOf(f.body as Uint8Array));
    const urls = rewrite.interfaceUrls(
      interfaces.map((i) => ({ url: stringField(i, 1), protocolBinding: stringField(i, 2) })),
    );
    const capabilities = fields.filter((f) => isField(f, 7)).map((f) => f.body as Uint8Array);
    const caps = encodeCapabilities(capabilities, rewrite.extension);
    const writer = new BinaryWriter();
    let nextInterface = 0;
    let capsWritten = false;
    for (const f of fields) {
      if (isField(f, 3)) {
        const parts = interfaces[nextInterface] ?? [];
        const url = urls[nextInterface] ?? stringField(parts, 1);
        nextInterface++;
        const one = new BinaryWriter();
        one.tag(1, WireType.LengthDelimited).string(url);
        for (const part of parts) if (part.field !== 1) one.raw(part.raw);
        writer.tag(3, WireType.LengthDelimited).bytes(one.finish());
      } else if (isField(f, 7)) {
        if (!capsWritten) writer.tag(7, WireType.LengthDelimited).bytes(caps);
        capsWritten = true;
      } else writer.raw(f.raw);
    }
    if (!capsWritten) writer.tag(7, WireType.LengthDelimited).bytes(caps);
    return writer.finish();
  } catch {
    return undefined;
  }
}
