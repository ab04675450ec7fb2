/**
 * @module google-rpc
 * The google.rpc error model as plain values (`Status`, `ErrorInfo`, `RetryInfo`, `QuotaFailure`,
 * `Duration`), its type URLs and the gRPC status codes.
 */

/**
 * `google.protobuf.Duration`: `seconds` (int64, field 1) and `nanos` (int32, field 2), both of the
 * same sign; range ±315,576,000,000 s.
 */
export interface Duration {
  /** Whole seconds (int64). */
  readonly seconds: bigint;
  /** Nanoseconds, −999,999,999…999,999,999, same sign as `seconds`. */
  readonly nanos: number;
}

/**
 * `google.rpc.ErrorInfo`: reason = 1, domain = 2, metadata = 3 (map<string, string>).
 */
export interface ErrorInfo {
  readonly reason: string;
  readonly domain: string;
  readonly metadata: Readonly<Record<string, string>>;
}

/**
 * `google.rpc.RetryInfo`: retry_delay = 1. `retryDelay` is absent when the message carried none
 * (or, from JSON, an unparseable one).
 */
export interface RetryInfo {
  readonly retryDelay?: Duration;
}

/**
 * `google.rpc.QuotaFailure.Violation`: subject = 1, description = 2, api_service = 3,
 * quota_metric = 4, quota_id = 5, quota_dimensions = 6 (map), quota_value = 7 (int64),
 * future_quota_value = 8 (optional int64). Empty strings / 0 mean "not set" (proto3).
 *
 * @example
 * ```ts
 * const v: QuotaViolation = {
 *   subject: 'caller:a', description: '60 requests per 60 s', apiService: '', quotaMetric: '',
 *   quotaId: 'per-caller', quotaDimensions: { method: 'SendMessage' }, quotaValue: 60n,
 * };
 * ```
 */
export interface QuotaViolation {
  readonly subject: string;
  readonly description: string;
  readonly apiService: string;
  readonly quotaMetric: string;
  readonly quotaId: string;
  readonly quotaDimensions: Readonly<Record<string, string>>;
  /** Enforced quota (int64). */
  readonly quotaValue: bigint;
  /** Quota being rolled out (int64), when a rollout is in progress. */
  readonly futureQuotaValue?: bigint;
}

/**
 * `google.rpc.QuotaFailure`: violations = 1.
 */
export interface QuotaFailure {
  readonly violations: readonly QuotaViolation[];
}

/**
 * `google.protobuf.Any` in binary form: type_url = 1, value = 2 (the packed message's bytes).
 */
export interface AnyMessage {
  readonly typeUrl: string;
  readonly value: Uint8Array;
}

/**
 * Type URLs of the detail messages this library understands.
 *
 * @example
 * ```ts
 * TYPE_URLS.retryInfo; // 'type.googleapis.com/google.rpc.RetryInfo'
 * ```
 */
export const TYPE_URLS = {
  errorInfo: 'type.googleapis.com/google.rpc.ErrorInfo',
  retryInfo: 'type.googleapis.com/google.rpc.RetryInfo',
  quotaFailure: 'type.googleapis.com/google.rpc.QuotaFailure',
} as const;

/**
 * One entry of `Status.details`: a message this library understands, or any other type kept as
 * received (its ProtoJSON object and/or its binary `Any` value) so it can be ignored or passed on.
 */
export type Detail = KnownDetail | OtherDetail;

/**
 * A detail of a type this library interprets.
 */
export type KnownDetail = {
  readonly [K in keyof KnownDetailMessages]: {
    readonly type: K;
    readonly message: KnownDetailMessages[K];
  };
}[keyof KnownDetailMessages];

/**
 * A detail of a type this library does not interpret.
 */
export interface OtherDetail {
  readonly type: 'other';
  readonly typeUrl: string;
  /** The ProtoJSON object (with `@type`), when it came from JSON. */
  readonly json?: Readonly<Record<string, unknown>>;
  /** The packed bytes, when it came from binary. */
  readonly value?: Uint8Array;
}

/**
 * `google.rpc.Status`: code = 1 (a `google.rpc.Code`), message = 2, details = 3 (repeated Any).
 */
export interface Status {
  readonly code: number;
  readonly message: string;
  readonly details: readonly Detail[];
}

/**
 * `google.rpc.Code` / gRPC status codes.
 *
 * @example
 * ```ts
 * GRPC_CODES.UNAVAILABLE; // 14
 * ```
 */
export const GRPC_CODES = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/**
 * The ErrorInfo domain A2A reserves for its own errors; a rate-limit reason in it is not ours.
 *
 * @example
 * ```ts
 * A2A_DOMAIN; // 'a2a-protocol.org'
 * ```
 */
export const A2A_DOMAIN = 'a2a-protocol.org';

/**
 * The fully-qualified message name of a type URL: the part after the last `/`.
 *
 * @example
 * ```ts
 * typeNameOf('type.googleapis.com/google.rpc.RetryInfo'); // 'google.rpc.RetryInfo'
 * ```
 */
export function typeNameOf(typeUrl: string): string {
  return typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
}

/**
 * Which known detail a type URL names, or `undefined`.
 *
 * @example
 * ```ts
 * knownDetailType('type.googleapis.com/google.rpc.ErrorInfo'); // 'ErrorInfo'
 * ```
 */
export function knownDetailType(
  typeUrl: string,
): 'ErrorInfo' | 'RetryInfo' | 'QuotaFailure' | undefined {
  switch (typeNameOf(typeUrl)) {
    case 'google.rpc.ErrorInfo':
      return 'ErrorInfo';
    case 'google.rpc.RetryInfo':
      return 'RetryInfo';
    case 'google.rpc.QuotaFailure':
      return 'QuotaFailure';
    default:
      return undefined;
  }
}

/**
 * The message type of each known detail.
 */
export interface KnownDetailMessages {
  readonly ErrorInfo: ErrorInfo;
  readonly RetryInfo: RetryInfo;
  readonly QuotaFailure: QuotaFailure;
}

/**
 * The first detail of a given known type, or `undefined`.
 *
 * @example
 * ```ts
 * findDetail(status.details, 'RetryInfo')?.retryDelay; // { seconds: 12n, nanos: 0 }
 * ```
 */
export function findDetail<T extends keyof KnownDetailMessages>(
  details: readonly Detail[],
  type: T,
): KnownDetailMessages[T] | undefined {
  for (const d of details) {
    // d.type === T, so its message is KnownDetailMessages[T]; TS cannot narrow a generic union.
    if (d.type === type) return (d as KnownDetail).message as KnownDetailMessages[T];
  }
  return undefined;
}
