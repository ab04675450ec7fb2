/**
 * @module grpc-message
 * An A2A 1.0 `Message` between its proto bytes and its JSON form. Pure.
 */

import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { decodeStruct, decodeValue, encodeStruct, encodeValue } from './grpc-struct.js';

const ROLES = ['ROLE_UNSPECIFIED', 'ROLE_USER', 'ROLE_AGENT'] as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A `Part`'s JSON form. */
function partOf(bytes: Uint8Array): Record<string, unknown> {
  const reader = new BinaryReader(bytes);
  const part: Record<string, unknown> = {};
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (wireType !== WireType.LengthDelimited) {
      reader.skip(wireType, field);
      continue;
    }
    if (field === 1) part.text = reader.string();
    else if (field === 2) part.raw = Buffer.from(reader.bytes()).toString('base64');
    else if (field === 3) part.url = reader.string();
    else if (field === 4) part.data = decodeValue(reader.bytes()) ?? null;
    else if (field === 5) part.metadata = decodeStruct(reader.bytes());
    else if (field === 6) part.filename = reader.string();
    else if (field === 7) part.mediaType = reader.string();
    else reader.skip(wireType, field);
  }
  return part;
}

/**
 * The JSON form of an encoded `Message`; undefined when the bytes cannot be read.
 *
 * @example
 * ```ts
 * grpcMessageJson(bytes); // { messageId: 'm-1', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] }
 * ```
 */
export function grpcMessageJson(bytes: Uint8Array): Record<string, unknown> | undefined {
  try {
    const reader = new BinaryReader(bytes);
    const out: Record<string, unknown> = { messageId: '', role: ROLES[0], parts: [] };
    const parts: Record<string, unknown>[] = [];
    const extensions: string[] = [];
    const references: string[] = [];
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === 4 && wireType === WireType.Varint) {
        const role = reader.int32();
        out.role = ROLES[role] ?? role;
      } else if (wireType !== WireType.LengthDelimited) reader.skip(wireType, field);
      else if (field === 1) out.messageId = reader.string();
      else if (field === 2) out.contextId = reader.string();
      else if (field === 3) out.taskId = reader.string();
      else if (field === 5) parts.push(partOf(reader.bytes()));
      else if (field === 6) out.metadata = decodeStruct(reader.bytes());
      else if (field === 7) extensions.push(reader.string());
      else if (field === 8) references.push(reader.string());
      else reader.skip(wireType, field);
    }
    out.parts = parts;
    if (extensions.length > 0) out.extensions = extensions;
    if (references.length > 0) out.referenceTaskIds = references;
    return out;
  } catch {
    return undefined;
  }
}

function writeString(writer: BinaryWriter, field: number, value: unknown): void {
  if (typeof value === 'string' && value !== '')
    writer.tag(field, WireType.LengthDelimited).string(value);
}

function writeStruct(writer: BinaryWriter, field: number, value: unknown): void {
  if (!isObject(value)) return;
  const bytes = encodeStruct(value);
  if (bytes === undefined) throw new Error('nested too deep');
  writer.tag(field, WireType.LengthDelimited).bytes(bytes);
}

/** A role as JSON-RPC 1.0 (`ROLE_AGENT`) or v0.3 (`agent`) writes it, as its enum number. */
function roleNumber(role: unknown): number {
  if (typeof role === 'number') return role;
  const at = ROLES.indexOf(role as (typeof ROLES)[number]);
  if (at >= 0) return at;
  return role === 'agent' ? 2 : role === 'user' ? 1 : 0;
}

function encodePart(part: Record<string, unknown>): Uint8Array {
  const writer = new BinaryWriter();
  // v0.3 file parts carry their content under `file`; 1.0 parts at the top level.
  const file = isObject(part.file) ? part.file : undefined;
  const raw = part.raw ?? file?.bytes;
  const url = part.url ?? file?.uri;
  if (typeof part.text === 'string') writer.tag(1, WireType.LengthDelimited).string(part.text);
  else if (typeof raw === 'string')
    writer.tag(2, WireType.LengthDelimited).bytes(Buffer.from(raw, 'base64'));
  else if (typeof url === 'string') writer.tag(3, WireType.LengthDelimited).string(url);
  else if (part.data !== undefined) {
    const value = encodeValue(part.data);
    if (value === undefined) throw new Error('nested too deep');
    writer.tag(4, WireType.LengthDelimited).bytes(value);
  }
  writeStruct(writer, 5, part.metadata);
  writeString(writer, 6, part.filename ?? file?.name);
  writeString(writer, 7, part.mediaType ?? file?.mimeType);
  return writer.finish();
}

/**
 * A Message's JSON form encoded as its proto bytes; undefined when it cannot be (not an object,
 * nested too deep).
 *
 * @example
 * ```ts
 * encodeGrpcMessage({ messageId: 'm-1', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] });
 * ```
 */
export function encodeGrpcMessage(message: unknown): Uint8Array | undefined {
  if (!isObject(message)) return undefined;
  try {
    const writer = new BinaryWriter();
    writeString(writer, 1, message.messageId);
    writeString(writer, 2, message.contextId);
    writeString(writer, 3, message.taskId);
    const role = roleNumber(message.role);
    if (role !== 0) writer.tag(4, WireType.Varint).int32(role);
    for (const part of Array.isArray(message.parts) ? message.parts : []) {
      if (isObject(part)) writer.tag(5, WireType.LengthDelimited).bytes(encodePart(part));
    }
    writeStruct(writer, 6, message.metadata);
    for (const e of Array.isArray(message.extensions) ? message.extensions : [])
      writeString(writer, 7, e);
    for (const r of Array.isArray(message.referenceTaskIds) ? message.referenceTaskIds : [])
      writeString(writer, 8, r);
    return writer.finish();
  } catch {
    return undefined;
  }
}

/**
 * A `SendMessageResponse` / `StreamResponse` whose payload is the encoded Message `message`
 * (field 2 of both).
 *
 * @example
 * ```ts
 * stream.write(grpcFrame(wrapMessage(messageBytes)));
 * ```
 */
export function wrapMessage(message: Uint8Array): Uint8Array {
  return new BinaryWriter().tag(2, WireType.LengthDelimited).bytes(message).finish();
}
