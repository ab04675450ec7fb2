/**
 * @module grpc-struct
 * A `google.protobuf.Struct` read from its wire bytes into its JSON form (the shape a Task's
 * `metadata` has on JSON-RPC and REST), so usage reports are read from gRPC answers by the same
 * dotted path. Bounded: nesting deeper than {@link MAX_STRUCT_DEPTH} is refused.
 */

import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

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
