/**
 * @module headers-like
 * Reading header fields and gRPC metadata from whatever object a transport hands over, without
 * throwing.
 */

import { base64Decode, getTextEncoding } from '@bufbuild/protobuf/wire';

/**
 * HTTP response headers: a fetch `Headers`-like object, or a record with case-insensitive keys.
 */
export type HeadersLike =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * gRPC (trailing) metadata as a record. Values of `-bin` keys are bytes or base64 text.
 */
export type MetadataLike = Readonly<
  Record<string, string | Uint8Array | readonly (string | Uint8Array)[] | undefined>
>;

/**
 * A header reader: the field value (repeated fields joined with `, `), or `undefined`.
 *
 * @example
 * ```ts
 * const get: HeaderLookup = headerLookup({ 'Retry-After': '3' });
 * get('retry-after'); // '3'
 * ```
 */
export type HeaderLookup = (name: string) => string | undefined;

/**
 * A metadata reader: every value of a key, in order (empty when absent).
 *
 * @example
 * ```ts
 * const values = metadataLookup({ a: ['1', '2'] })('a'); // ['1', '2']
 * ```
 */
export type MetadataLookup = (name: string) => readonly (string | Uint8Array)[];

function hasGet(value: unknown): value is { get(name: string): unknown } {
  return safely(
    () =>
      typeof value === 'object' &&
      value !== null &&
      typeof (value as { get?: unknown }).get === 'function',
    false,
  );
}

function safely<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

/** Case-insensitive record lookup: exact key first, then any key that lower-cases equal. */
function recordEntry(record: Readonly<Record<string, unknown>>, name: string): unknown {
  if (Object.hasOwn(record, name)) return record[name];
  const wanted = name.toLowerCase();
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() === wanted) return record[key];
  }
  return undefined;
}

function toValues(raw: unknown): (string | Uint8Array)[] {
  const items = Array.isArray(raw) ? raw : [raw];
  return items.filter(
    (v): v is string | Uint8Array => typeof v === 'string' || v instanceof Uint8Array,
  );
}

function textOf(value: string | Uint8Array): string {
  return typeof value === 'string' ? value : getTextEncoding().decodeUtf8(value);
}

/**
 * A case-insensitive reader over any `HeadersLike` (and tolerant of anything else: an
 * object that is neither yields no headers).
 *
 * @example
 * ```ts
 * headerLookup(new Headers({ RateLimit: '"a";r=0;t=5' }))('ratelimit'); // '"a";r=0;t=5'
 * ```
 */
export function headerLookup(headers: unknown): HeaderLookup {
  if (hasGet(headers)) {
    return (name) =>
      safely(() => {
        const value = headers.get(name);
        if (typeof value === 'string') return value;
        const values = toValues(value);
        return values.length === 0 ? undefined : values.map(textOf).join(', ');
      }, undefined);
  }
  if (typeof headers !== 'object' || headers === null) return () => undefined;
  const record = headers as Readonly<Record<string, unknown>>;
  return (name) =>
    safely(() => {
      const values = toValues(recordEntry(record, name));
      return values.length === 0 ? undefined : values.map(textOf).join(', ');
    }, undefined);
}

/**
 * A reader over {@link MetadataLike} or a grpc-js `Metadata`-like object (`get(key)` returning an
 * array of values).
 *
 * @example
 * ```ts
 * metadataLookup({ 'retry-after': '3' })('retry-after'); // ['3']
 * ```
 */
export function metadataLookup(metadata: unknown): MetadataLookup {
  if (hasGet(metadata)) {
    return (name) => safely(() => toValues(metadata.get(name)), []);
  }
  if (typeof metadata !== 'object' || metadata === null) return () => [];
  const record = metadata as Readonly<Record<string, unknown>>;
  return (name) => safely(() => toValues(recordEntry(record, name)), []);
}

/**
 * Headers view of metadata: text values joined with `, ` (as HTTP/2 would carry them).
 *
 * @example
 * ```ts
 * metadataHeaders(metadataLookup({ 'retry-after': '3' }))('retry-after'); // '3'
 * ```
 */
export function metadataHeaders(lookup: MetadataLookup): HeaderLookup {
  return (name) => {
    const values = lookup(name);
    return values.length === 0 ? undefined : values.map(textOf).join(', ');
  };
}

/**
 * Every binary value of a `-bin` key: byte values as-is, base64 text decoded (padded or not;
 * several values joined by `,` split first). Undecodable pieces are dropped.
 *
 * @example
 * ```ts
 * binaryMetadataValues(metadataLookup({ 'x-bin': 'AQI,AwQ=' }), 'x-bin'); // [Uint8Array [1, 2], Uint8Array [3, 4]]
 * ```
 */
export function binaryMetadataValues(lookup: MetadataLookup, name: string): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const value of lookup(name)) {
    if (value instanceof Uint8Array) {
      out.push(value);
      continue;
    }
    for (const piece of value.split(',')) {
      const text = piece.trim();
      if (text === '') continue;
      const bytes = safely<Uint8Array | undefined>(() => base64Decode(text), undefined);
      if (bytes !== undefined) out.push(bytes);
    }
  }
  return out;
}
