/**
 * @module proto-binary
 * Binary protobuf for the google.rpc error model: `google.rpc.Status` with its details packed in
 * `google.protobuf.Any`.
 */

import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { retryDelayOf } from './duration.js';
import {
  type AnyMessage,
  type Detail,
  type Duration,
  type ErrorInfo,
  knownDetailType,
  type QuotaFailure,
  type QuotaViolation,
  type RetryInfo,
  type Status,
  TYPE_URLS,
} from './google-rpc.js';
import { statusToJson } from './proto-json.js';

// ---------------------------------------------------------------------------------------------
// Writing

function writeString(w: BinaryWriter, fieldNo: number, value: string): void {
  if (value !== '') w.tag(fieldNo, WireType.LengthDelimited).string(value);
}

function writeInt64(w: BinaryWriter, fieldNo: number, value: bigint): void {
  if (value !== 0n) w.tag(fieldNo, WireType.Varint).int64(value);
}

function writeStringMap(
  w: BinaryWriter,
  fieldNo: number,
  map: Readonly<Record<string, string>>,
): void {
  for (const [key, value] of Object.entries(map)) {
    w.tag(fieldNo, WireType.LengthDelimited).fork();
    writeString(w, 1, key);
    writeString(w, 2, value);
    w.join();
  }
}

function writeDuration(w: BinaryWriter, duration: Duration): void {
  writeInt64(w, 1, duration.seconds);
  if (duration.nanos !== 0) w.tag(2, WireType.Varint).int32(duration.nanos);
}

function writeErrorInfo(w: BinaryWriter, info: ErrorInfo): void {
  writeString(w, 1, info.reason);
  writeString(w, 2, info.domain);
  writeStringMap(w, 3, info.metadata);
}

function writeRetryInfo(w: BinaryWriter, info: RetryInfo): void {
  if (info.retryDelay === undefined) return;
  w.tag(1, WireType.LengthDelimited).fork();
  writeDuration(w, info.retryDelay);
  w.join();
}

function writeViolation(w: BinaryWriter, v: QuotaViolation): void {
  writeString(w, 1, v.subject);
  writeString(w, 2, v.description);
  writeString(w, 3, v.apiService);
  writeString(w, 4, v.quotaMetric);
  writeString(w, 5, v.quotaId);
  writeStringMap(w, 6, v.quotaDimensions);
  writeInt64(w, 7, v.quotaValue);
  // Explicit presence: written whenever set, even to 0.
  if (v.futureQuotaValue !== undefined) w.tag(8, WireType.Varint).int64(v.futureQuotaValue);
}

function writeQuotaFailure(w: BinaryWriter, failure: QuotaFailure): void {
  for (const v of failure.violations) {
    w.tag(1, WireType.LengthDelimited).fork();
    writeViolation(w, v);
    w.join();
  }
}

function encodeWith(write: (w: BinaryWriter) => void): Uint8Array {
  const w = new BinaryWriter();
  write(w);
  return w.finish();
}

/**
 * Packs a detail into a `google.protobuf.Any`. An `other` detail is packed only when its bytes
 * are known (it came from binary); otherwise `undefined`.
 *
 * @example
 * ```ts
 * packDetail({ type: 'RetryInfo', message: { retryDelay: { seconds: 12n, nanos: 0 } } });
 * // { typeUrl: 'type.googleapis.com/google.rpc.RetryInfo', value: Uint8Array [0x0a, 0x02, 0x08, 0x0c] }
 * ```
 */
export function packDetail(detail: Detail): AnyMessage | undefined {
  switch (detail.type) {
    case 'ErrorInfo':
      return {
        typeUrl: TYPE_URLS.errorInfo,
        value: encodeWith((w) => writeErrorInfo(w, detail.message)),
      };
    case 'RetryInfo':
      return {
        typeUrl: TYPE_URLS.retryInfo,
        value: encodeWith((w) => writeRetryInfo(w, detail.message)),
      };
    case 'QuotaFailure':
      return {
        typeUrl: TYPE_URLS.quotaFailure,
        value: encodeWith((w) => writeQuotaFailure(w, detail.message)),
      };
    case 'other':
      return detail.value === undefined
        ? undefined
        : { typeUrl: detail.typeUrl, value: detail.value };
  }
}

/**
 * Binary `google.rpc.Status` (code = 1, message = 2, details = 3 as `Any{type_url = 1, value = 2}`).
 * Proto3 rules: default values are not written.
 *
 * @example
 * ```ts
 * const bytes = encodeStatus({ code: 8, message: 'rate limited',
 *   details: [{ type: 'RetryInfo', message: { retryDelay: { seconds: 12n, nanos: 0 } } }] });
 * base64Encode(bytes); // 'CAgSDHJhdGUgbGltaXRlZBowCih0eXBlLmdvb2dsZWFwaXMuY29tL2dvb2dsZS5ycGMuUmV0cnlJbmZvEgQKAggM'
 * ```
 */
export function encodeStatus(status: Status): Uint8Array {
  return encodeWith((w) => {
    if (status.code !== 0) w.tag(1, WireType.Varint).int32(status.code);
    writeString(w, 2, status.message);
    for (const detail of status.details) {
      const any = packDetail(detail);
      if (any === undefined) continue;
      w.tag(3, WireType.LengthDelimited).fork();
      writeString(w, 1, any.typeUrl);
      if (any.value.length > 0) w.tag(2, WireType.LengthDelimited).bytes(any.value);
      w.join();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Reading

/**
 * Reads every field of a message: `onField` returns true when it consumed the field; anything
 * else (unknown field numbers, unexpected wire types) is skipped.
 */
function readFields(
  bytes: Uint8Array,
  onField: (r: BinaryReader, fieldNo: number, wireType: WireType) => boolean,
): void {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [fieldNo, wireType] = r.tag();
    if (!onField(r, fieldNo, wireType)) r.skip(wireType, fieldNo);
  }
}

const isBytes = (wt: WireType): boolean => wt === WireType.LengthDelimited;
const isVarint = (wt: WireType): boolean => wt === WireType.Varint;

function readStringMapEntry(bytes: Uint8Array, into: Record<string, string>): void {
  let key = '';
  let value = '';
  readFields(bytes, (r, no, wt) => {
    if (no === 1 && isBytes(wt)) key = r.string();
    else if (no === 2 && isBytes(wt)) value = r.string();
    else return false;
    return true;
  });
  into[key] = value;
}

function readDuration(bytes: Uint8Array): Duration {
  let seconds = 0n;
  let nanos = 0;
  readFields(bytes, (r, no, wt) => {
    if (no === 1 && isVarint(wt)) seconds = BigInt(r.int64());
    else if (no === 2 && isVarint(wt)) nanos = r.int32();
    else return false;
    return true;
  });
  return { seconds, nanos };
}

function readErrorInfo(bytes: Uint8Array): ErrorInfo {
  let reason = '';
  let domain = '';
  const metadata: Record<string, string> = {};
  readFields(bytes, (r, no, wt) => {
    if (!isBytes(wt)) return false;
    if (no === 1) reason = r.string();
    else if (no === 2) domain = r.string();
    else if (no === 3) readStringMapEntry(r.bytes(), metadata);
    else return false;
    return true;
  });
  return { reason, domain, metadata };
}

function readRetryInfo(bytes: Uint8Array): RetryInfo {
  let retryDelay: Duration | undefined;
  readFields(bytes, (r, no, wt) => {
    if (no !== 1 || !isBytes(wt)) return false;
    retryDelay = readDuration(r.bytes());
    return true;
  });
  // A delay past protobuf's range is the longest one: too long a hint, not no hint.
  const delay = retryDelay === undefined ? undefined : retryDelayOf(retryDelay);
  return delay === undefined ? {} : { retryDelay: delay };
}

function readViolation(bytes: Uint8Array): QuotaViolation {
  const strings = ['', '', '', '', '', ''];
  const quotaDimensions: Record<string, string> = {};
  let quotaValue = 0n;
  let futureQuotaValue: bigint | undefined;
  readFields(bytes, (r, no, wt) => {
    if (no >= 1 && no <= 5 && isBytes(wt)) strings[no] = r.string();
    else if (no === 6 && isBytes(wt)) readStringMapEntry(r.bytes(), quotaDimensions);
    else if (no === 7 && isVarint(wt)) quotaValue = BigInt(r.int64());
    else if (no === 8 && isVarint(wt)) futureQuotaValue = BigInt(r.int64());
    else return false;
    return true;
  });
  const [, subject = '', description = '', apiService = '', quotaMetric = '', quotaId = ''] =
    strings;
  return {
    subject,
    description,
    apiService,
    quotaMetric,
    quotaId,
    quotaDimensions,
    quotaValue,
    ...(futureQuotaValue === undefined ? {} : { futureQuotaValue }),
  };
}

function readQuotaFailure(bytes: Uint8Array): QuotaFailure {
  const violations: QuotaViolation[] = [];
  readFields(bytes, (r, no, wt) => {
    if (no !== 1 || !isBytes(wt)) return false;
    violations.push(readViolation(r.bytes()));
    return true;
  });
  return { violations };
}

/**
 * Unpacks a `google.protobuf.Any` into a detail: known types decoded, others kept as bytes.
 * Throws on malformed bytes of a known type.
 *
 * @example
 * ```ts
 * unpackDetail({ typeUrl: TYPE_URLS.retryInfo, value: new Uint8Array([0x0a, 0x02, 0x08, 0x0c]) });
 * // { type: 'RetryInfo', message: { retryDelay: { seconds: 12n, nanos: 0 } } }
 * ```
 */
export function unpackDetail(any: AnyMessage): Detail {
  switch (knownDetailType(any.typeUrl)) {
    case 'ErrorInfo':
      return { type: 'ErrorInfo', message: readErrorInfo(any.value) };
    case 'RetryInfo':
      return { type: 'RetryInfo', message: readRetryInfo(any.value) };
    case 'QuotaFailure':
      return { type: 'QuotaFailure', message: readQuotaFailure(any.value) };
    default:
      return { type: 'other', typeUrl: any.typeUrl, value: any.value };
  }
}

function readAny(bytes: Uint8Array): AnyMessage {
  let typeUrl = '';
  let value: Uint8Array = new Uint8Array(0);
  readFields(bytes, (r, no, wt) => {
    if (no === 1 && isBytes(wt)) typeUrl = r.string();
    else if (no === 2 && isBytes(wt)) value = r.bytes();
    else return false;
    return true;
  });
  return { typeUrl, value };
}

/**
 * Decodes a binary `google.rpc.Status`. Unknown fields and fields of an unexpected wire type are
 * skipped (proto3). Throws on truncated or otherwise malformed input (catch it on untrusted bytes;
 * `tryDecodeStatus` does, inside the library).
 *
 * The value holds int64s as `bigint` (`Duration.seconds`, `QuotaViolation.quotaValue`), and is
 * JSON-safe all the same: `JSON.stringify` writes its ProtoJSON (a non-enumerable `toJSON`, as
 * {@link statusToJson} renders it: durations as `"12s"`, int64 as strings; details of types this
 * library does not know, which binary carries without their schema, are left out).
 *
 * @example
 * ```ts
 * decodeStatus(encodeStatus({ code: 8, message: 'x', details: [] })); // { code: 8, message: 'x', details: [] }
 * JSON.stringify(decodeStatus(trailer)); // '{"code":8,"message":"…","details":[…,{"@type":"…RetryInfo","retryDelay":"12s"}]}'
 * ```
 */
export function decodeStatus(bytes: Uint8Array): Status {
  let code = 0;
  let message = '';
  const details: Detail[] = [];
  readFields(bytes, (r, no, wt) => {
    if (no === 1 && isVarint(wt)) code = r.int32();
    else if (no === 2 && isBytes(wt)) message = r.string();
    else if (no === 3 && isBytes(wt)) details.push(unpackDetail(readAny(r.bytes())));
    else return false;
    return true;
  });
  const status: Status = { code, message, details };
  // Not enumerable: the value still equals a plain Status; JSON.stringify finds it all the same.
  Object.defineProperty(status, 'toJSON', { value: () => statusToJson(status) });
  return status;
}

/**
 * `decodeStatus` that returns `undefined` instead of throwing.
 *
 * @example
 * ```ts
 * tryDecodeStatus(new Uint8Array([0x1a, 0x05])); // undefined (truncated)
 * ```
 */
export function tryDecodeStatus(bytes: Uint8Array): Status | undefined {
  try {
    return decodeStatus(bytes);
  } catch {
    return undefined;
  }
}
