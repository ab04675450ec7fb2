/**
 * @module grpc-struct
 * `google.protobuf.Struct` wire bytes to JSON and back, bounded in depth.
 */

import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';

/** Nesting (structs and lists) deeper than this is not read: the whole Struct is undefined. */
export const MAX_STRUCT_DEPTH = 64;

class TooDeep extends Error {}

/** A `Value` (null 1, number 2, string 3, bool 4, struct 5, list 6) as JSON. */
function jsonValueOf(bytes: Uint8Array, depth: number): unknown {
  const reader = new BinaryReader(bytes);
  let value: unknown = null;
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1 && wireType === WireType.Varint) {
      reader.int32();
      value = null;
    } else if (field === 2 && wireType === WireType.Bit64) value = reader.double();
    else if (field === 3 && wireType === WireType.LengthDelimited) value = reader.string();
    else if (field === 4 && wireType === WireType.Varint) value = reader.bool();
    else if (field === 5 && wireType === WireType.LengthDelimited) {
      value = structOf(reader.bytes(), depth + 1);
    } else if (field === 6 && wireType === WireType.LengthDelimited) {
      value = listOf(reader.bytes(), depth + 1);
    } else reader.skip(wireType, field);
  }
  return value;
}

/** A `ListValue` (values 1) as a JSON array. */
function listOf(bytes: Uint8Array, depth: number): unknown[] {
  if (depth > MAX_STRUCT_DEPTH) throw new TooDeep();
  const reader = new BinaryReader(bytes);
  const out: unknown[] = [];
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1 && wireType === WireType.LengthDelimited)
      out.push(jsonValueOf(reader.bytes(), depth));
    else reader.skip(wireType, field);
  }
  return out;
}

/** A `Struct` (fields 1: map entries of key 1, value 2) as a JSON object. */
function structOf(bytes: Uint8Array, depth: number): Record<string, unknown> {
  if (depth > MAX_STRUCT_DEPTH) throw new TooDeep();
  const reader = new BinaryReader(bytes);
  const out: Record<string, unknown> = Object.create(null);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field !== 1 || wireType !== WireType.LengthDelimited) {
      reader.skip(wireType, field);
      continue;
    }
    const entry = new BinaryReader(reader.bytes());
    let key = '';
    let value: unknown = null;
    while (entry.pos < entry.len) {
      const [entryField, entryWire] = entry.tag();
      if (entryField === 1 && entryWire === WireType.LengthDelimited) key = entry.string();
      else if (entryField === 2 && entryWire === WireType.LengthDelimited) {
        value = jsonValueOf(entry.bytes(), depth);
      } else entry.skip(entryWire, entryField);
    }
    out[key] = value;
  }
  return out;
}

/**
 * The JSON form of an encoded `google.protobuf.Struct`; undefined when it is nested deeper than
 * {@link MAX_STRUCT_DEPTH} or cannot be read.
 *
 * @example
 * ```ts
 * decodeStruct(metadataBytes); // { usage: { totalTokens: 4000 } }
 * ```
 */
export function decodeStruct(bytes: Uint8Array): Record<string, unknown> | undefined {
  try {
    return structOf(bytes, 1);
  } catch {
    return undefined;
  }
}

/** Writes one JSON value as a `Value`'s fields. */
function writeValue(writer: BinaryWriter, value: unknown, depth: number): void {
  if (depth > MAX_STRUCT_DEPTH) throw new TooDeep();
  if (value === null) writer.tag(1, WireType.Varint).int32(0);
  else if (typeof value === 'number') writer.tag(2, WireType.Bit64).double(value);
  else if (typeof value === 'string') writer.tag(3, WireType.LengthDelimited).string(value);
  else if (typeof value === 'boolean') writer.tag(4, WireType.Varint).bool(value);
  else if (Array.isArray(value)) {
    writer.tag(6, WireType.LengthDelimited).fork();
    for (const item of value) {
      if (item === undefined) continue;
      writer.tag(1, WireType.LengthDelimited).fork();
      writeValue(writer, item, depth + 1);
      writer.join();
    }
    writer.join();
  } else if (typeof value === 'object') {
    writer.tag(5, WireType.LengthDelimited).fork();
    writeStruct(writer, value as Record<string, unknown>, depth + 1);
    writer.join();
  } else writer.tag(1, WireType.Varint).int32(0);
}

/** Writes a JSON object as a `Struct`'s map entries (undefined members left out, as JSON does). */
function writeStruct(writer: BinaryWriter, object: Record<string, unknown>, depth: number): void {
  if (depth > MAX_STRUCT_DEPTH) throw new TooDeep();
  for (const [key, value] of Object.entries(object)) {
    if (value === undefined) continue;
    writer.tag(1, WireType.LengthDelimited).fork();
    writer.tag(1, WireType.LengthDelimited).string(key);
    writer.tag(2, WireType.LengthDelimited).fork();
    writeValue(writer, value, depth);
    writer.join();
    writer.join();
  }
}

/**
 * A JSON object encoded as a `google.protobuf.Struct`; undefined when it is nested deeper than
 * {@link MAX_STRUCT_DEPTH}.
 *
 * @example
 * ```ts
 * decodeStruct(encodeStruct({ callerTier: 'pro' }) as Uint8Array); // { callerTier: 'pro' }
 * ```
 */
export function encodeStruct(object: Record<string, unknown>): Uint8Array | undefined {
  try {
    const writer = new BinaryWriter();
    writeStruct(writer, object, 1);
    return writer.finish();
  } catch {
    return undefined;
  }
}

/**
 * The JSON form of an encoded `google.protobuf.Value`; undefined when it is nested too deep or
 * cannot be read.
 *
 * @example
 * ```ts
 * decodeValue(encodeValue([1, 'a']) as Uint8Array); // [1, 'a']
 * ```
 */
export function decodeValue(bytes: Uint8Array): unknown {
  try {
    return jsonValueOf(bytes, 1);
  } catch {
    return undefined;
  }
}

/**
 * A JSON value encoded as a `google.protobuf.Value`; undefined when it is nested too deep.
 *
 * @example
 * ```ts
 * encodeValue({ rows: [1, 2] });
 * ```
 */
export function encodeValue(value: unknown): Uint8Array | undefined {
  try {
    const writer = new BinaryWriter();
    writeValue(writer, value, 1);
    return writer.finish();
  } catch {
    return undefined;
  }
}
