/**
 * @module error-body
 * Reading an HTTP error body of any shape an A2A agent or a gateway may send.
 */

import type { Detail } from './google-rpc.js';
import { detailsFromJson } from './proto-json.js';

/**
 * The parts of an error body that matter for retrying.
 */
export interface ErrorBody {
  /** `json-rpc` envelope, `google-rpc` (`{"error":{…}}`), bare `status`, or `problem` (RFC 9457). */
  readonly shape: 'json-rpc' | 'google-rpc' | 'status' | 'problem';
  /**
   * `error.code`: the JSON-RPC code, the HTTP status (google-rpc), the `google.rpc.Code` (status),
   * or the problem's `status`.
   */
  readonly code?: number;
  /** `error.status`: the `google.rpc.Code` name (google-rpc shape). */
  readonly statusName?: string;
  readonly message?: string;
  readonly details: readonly Detail[];
  /** Problem `type` URI. */
  readonly problemType?: string;
  /** Problem `violated-policies` (RateLimit draft §5). */
  readonly violatedPolicies?: readonly string[];
  /**
   * JSON-RPC `error.data` given as a plain object without `@type` — what SDKs that keep only
   * `ErrorInfo.metadata` forward (a2a-python's `InternalError.data`): its string entries.
   */
  readonly dataMetadata?: Readonly<Record<string, string>>;
}

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalInteger(value: unknown): { code?: number } {
  return typeof value === 'number' && Number.isInteger(value) ? { code: value } : {};
}

function optionalString<K extends string>(key: K, value: unknown): { [P in K]?: string } {
  return (typeof value === 'string' ? { [key]: value } : {}) as { [P in K]?: string };
}

function parseJson(body: string): unknown {
  const text = body.replace(/^\uFEFF/, '').trim();
  if (!text.startsWith('{') && !text.startsWith('[')) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A plain object's string entries (no `@type`: not a detail), or `undefined`. */
function plainMetadata(value: unknown): { dataMetadata?: Record<string, string> } {
  if (!isObject(value) || '@type' in value) return {};
  const entries = Object.entries(value).filter(
    (e): e is [string, string] => typeof e[1] === 'string',
  );
  return entries.length === 0 ? {} : { dataMetadata: Object.fromEntries(entries) };
}

function fromEnvelopeError(shape: 'json-rpc' | 'google-rpc', error: JsonObject): ErrorBody {
  const raw = shape === 'json-rpc' ? error.data : (error.details ?? error.data);
  return {
    shape,
    ...optionalInteger(error.code),
    ...optionalString('statusName', error.status),
    ...optionalString('message', error.message),
    details: detailsFromJson(raw),
    ...(shape === 'json-rpc' ? plainMetadata(error.data) : {}),
  };
}

function fromProblem(object: JsonObject): ErrorBody {
  const policies = object['violated-policies'];
  return {
    shape: 'problem',
    ...optionalInteger(object.status),
    ...optionalString('message', object.detail ?? object.title),
    ...optionalString('problemType', object.type),
    details: [],
    ...(Array.isArray(policies)
      ? { violatedPolicies: policies.filter((p): p is string => typeof p === 'string') }
      : {}),
  };
}

/**
 * Reads an error body: a JSON-RPC error envelope (`data` as an array, an object or absent),
 * google.rpc.Status JSON under `error` (AIP-193, A2A's HTTP+JSON binding), a bare ProtoJSON
 * `google.rpc.Status`, or RFC 9457 problem details. `undefined` for anything else (an HTML gateway
 * page, empty or truncated JSON).
 *
 * @example
 * ```ts
 * parseErrorBody('{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}');
 * // { shape: 'json-rpc', code: -32603, message: 'Internal error', details: [] }
 * parseErrorBody('<html><body>502 Bad Gateway</body></html>'); // undefined
 * ```
 */
export function parseErrorBody(body: string | undefined): ErrorBody | undefined {
  if (typeof body !== 'string' || body === '') return undefined;
  let json = parseJson(body);
  // A JSON-RPC batch answer: read its first error.
  if (Array.isArray(json)) json = json.find((e) => isObject(e) && isObject(e.error));
  if (!isObject(json)) return undefined;
  if (isObject(json.error)) {
    const jsonRpc =
      json.jsonrpc !== undefined || (typeof json.error.code === 'number' && json.error.code < 0);
    return fromEnvelopeError(jsonRpc ? 'json-rpc' : 'google-rpc', json.error);
  }
  if (typeof json.type === 'string' || typeof json.title === 'string') return fromProblem(json);
  if (typeof json.code === 'number' && (Array.isArray(json.details) || 'message' in json)) {
    return {
      shape: 'status',
      ...optionalInteger(json.code),
      ...optionalString('message', json.message),
      details: detailsFromJson(json.details),
    };
  }
  return undefined;
}
