/**
 * @module proto-json
 * ProtoJSON for the google.rpc error model (details as `Any` objects with `@type`), both ways.
 */

import { formatJsonDuration, parseJsonRetryDelay } from './duration.js';
import {
  type Detail,
  type ErrorInfo,
  knownDetailType,
  type QuotaFailure,
  type QuotaViolation,
  type RetryInfo,
  type Status,
  TYPE_URLS,
} from './google-rpc.js';

/** A ProtoJSON object. */
export type JsonObject = Record<string, unknown>;

const INT64_TEXT = /^-?\d{1,19}$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A member by its lowerCamelCase or original proto name. */
function member(object: JsonObject, camel: string, snake: string): unknown {
  return Object.hasOwn(object, camel) ? object[camel] : object[snake];
}

function stringMember(object: JsonObject, camel: string, snake = camel): string {
  const value = member(object, camel, snake);
  return typeof value === 'string' ? value : '';
}

function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isObject(value)) return out;
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry === 'string') out[key] = entry;
  }
  return out;
}

/**
 * Reads a ProtoJSON int64 (a decimal string, or a JSON number that is a safe integer).
 *
 * @example
 * ```ts
 * parseJsonInt64('100'); // 100n
 * parseJsonInt64(1.5);   // undefined
 * ```
 */
export function parseJsonInt64(value: unknown): bigint | undefined {
  let parsed: bigint | undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value)) parsed = BigInt(value);
  else if (typeof value === 'string' && INT64_TEXT.test(value)) parsed = BigInt(value);
  if (parsed === undefined || parsed < INT64_MIN || parsed > INT64_MAX) return undefined;
  return parsed;
}

function nonEmptyMap(map: Readonly<Record<string, string>>): boolean {
  return Object.keys(map).length > 0;
}

/** Copies the entries whose value is not the proto3 default. */
function withoutDefaults(object: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(object)) {
    if (value === undefined || value === '') continue;
    if (isObject(value) && Object.keys(value).length === 0) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    out[key] = value;
  }
  return out;
}

function errorInfoToJson(info: ErrorInfo): JsonObject {
  return withoutDefaults({
    '@type': TYPE_URLS.errorInfo,
    reason: info.reason,
    domain: info.domain,
    metadata: nonEmptyMap(info.metadata) ? { ...info.metadata } : undefined,
  });
}

function violationToJson(v: QuotaViolation): JsonObject {
  return withoutDefaults({
    subject: v.subject,
    description: v.description,
    apiService: v.apiService,
    quotaMetric: v.quotaMetric,
    quotaId: v.quotaId,
    quotaDimensions: nonEmptyMap(v.quotaDimensions) ? { ...v.quotaDimensions } : undefined,
    quotaValue: v.quotaValue === 0n ? undefined : String(v.quotaValue),
    futureQuotaValue: v.futureQuotaValue === undefined ? undefined : String(v.futureQuotaValue),
  });
}

/**
 * The ProtoJSON `Any` object of a detail. An `other` detail is passed through when it came from
 * JSON; one known only in binary form cannot be rendered without its schema and yields `undefined`.
 *
 * @example
 * ```ts
 * detailToJson({ type: 'RetryInfo', message: { retryDelay: { seconds: 12n, nanos: 0 } } });
 * // { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12s' }
 * ```
 */
export function detailToJson(detail: Detail): JsonObject | undefined {
  switch (detail.type) {
    case 'ErrorInfo':
      return errorInfoToJson(detail.message);
    case 'RetryInfo':
      return detail.message.retryDelay === undefined
        ? { '@type': TYPE_URLS.retryInfo }
        : {
            '@type': TYPE_URLS.retryInfo,
            retryDelay: formatJsonDuration(detail.message.retryDelay),
          };
    case 'QuotaFailure':
      return withoutDefaults({
        '@type': TYPE_URLS.quotaFailure,
        violations: detail.message.violations.map(violationToJson),
      });
    case 'other':
      return detail.json === undefined ? undefined : { ...detail.json };
  }
}

/**
 * The ProtoJSON array of a details list (details that cannot be rendered are left out).
 *
 * @example
 * ```ts
 * JSON.stringify(detailsToJson(status.details));
 * ```
 */
export function detailsToJson(details: readonly Detail[]): JsonObject[] {
  const out: JsonObject[] = [];
  for (const d of details) {
    const json = detailToJson(d);
    if (json !== undefined) out.push(json);
  }
  return out;
}

function errorInfoFromJson(object: JsonObject): ErrorInfo {
  return {
    reason: stringMember(object, 'reason'),
    domain: stringMember(object, 'domain'),
    metadata: stringMap(object.metadata),
  };
}

function retryInfoFromJson(object: JsonObject): RetryInfo {
  const retryDelay = parseJsonRetryDelay(member(object, 'retryDelay', 'retry_delay'));
  return retryDelay === undefined ? {} : { retryDelay };
}

function violationFromJson(object: JsonObject): QuotaViolation {
  const future = parseJsonInt64(member(object, 'futureQuotaValue', 'future_quota_value'));
  return {
    subject: stringMember(object, 'subject'),
    description: stringMember(object, 'description'),
    apiService: stringMember(object, 'apiService', 'api_service'),
    quotaMetric: stringMember(object, 'quotaMetric', 'quota_metric'),
    quotaId: stringMember(object, 'quotaId', 'quota_id'),
    quotaDimensions: stringMap(member(object, 'quotaDimensions', 'quota_dimensions')),
    quotaValue: parseJsonInt64(member(object, 'quotaValue', 'quota_value')) ?? 0n,
    ...(future === undefined ? {} : { futureQuotaValue: future }),
  };
}

function quotaFailureFromJson(object: JsonObject): QuotaFailure {
  const violations = object.violations;
  return {
    violations: Array.isArray(violations) ? violations.filter(isObject).map(violationFromJson) : [],
  };
}

/**
 * Reads one ProtoJSON `Any` object; `undefined` when it is not an object with a string `@type`.
 * Tolerant: field names in lowerCamelCase or as in the proto, int64 as a string or a number;
 * members of the wrong type are ignored.
 *
 * @example
 * ```ts
 * detailFromJson({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '3s' });
 * // { type: 'RetryInfo', message: { retryDelay: { seconds: 3n, nanos: 0 } } }
 * ```
 */
export function detailFromJson(value: unknown): Detail | undefined {
  if (!isObject(value)) return undefined;
  const typeUrl = value['@type'];
  if (typeof typeUrl !== 'string') return undefined;
  switch (knownDetailType(typeUrl)) {
    case 'ErrorInfo':
      return { type: 'ErrorInfo', message: errorInfoFromJson(value) };
    case 'RetryInfo':
      return { type: 'RetryInfo', message: retryInfoFromJson(value) };
    case 'QuotaFailure':
      return { type: 'QuotaFailure', message: quotaFailureFromJson(value) };
    default:
      return { type: 'other', typeUrl, json: value };
  }
}

/**
 * Reads a details list in any shape seen on the wire: an array of `Any` objects, a single `Any`
 * object, or anything else (no details). Entries without `@type` are skipped.
 *
 * @example
 * ```ts
 * detailsFromJson(body.error.data); // [] when data is absent or a free-form object
 * ```
 */
export function detailsFromJson(value: unknown): Detail[] {
  const items = Array.isArray(value) ? value : [value];
  const out: Detail[] = [];
  for (const item of items) {
    const detail = detailFromJson(item);
    if (detail !== undefined) out.push(detail);
  }
  return out;
}

/**
 * ProtoJSON of a `google.rpc.Status` (`code` is the `google.rpc.Code` number).
 *
 * @example
 * ```ts
 * statusToJson({ code: 8, message: 'rate limited', details: [] }); // { code: 8, message: 'rate limited' }
 * ```
 */
export function statusToJson(status: Status): JsonObject {
  return withoutDefaults({
    code: status.code === 0 ? undefined : status.code,
    message: status.message,
    details: detailsToJson(status.details),
  });
}

/**
 * Reads a ProtoJSON `google.rpc.Status`; `undefined` when `value` is not an object.
 *
 * @example
 * ```ts
 * statusFromJson({ code: 14, message: 'busy' }); // { code: 14, message: 'busy', details: [] }
 * ```
 */
export function statusFromJson(value: unknown): Status | undefined {
  if (!isObject(value)) return undefined;
  const code = value.code;
  return {
    code: typeof code === 'number' && Number.isInteger(code) ? code : 0,
    message: stringMember(value, 'message'),
    details: detailsFromJson(value.details ?? []),
  };
}
