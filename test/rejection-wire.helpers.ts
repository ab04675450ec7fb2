/**
 * A rejection on each binding's wire, with the public parts only. Reading: the way a third party
 * would (`parseErrorBody`, `decodeStatus`, `findDetail`), one shape for the
 * three bindings, so a test can say "the same rejection on JSON-RPC, HTTP+JSON and gRPC". Writing:
 * a fake agent's JSON-RPC and gRPC refusals, derived from the public `encodeRestRejection` and
 * `encodeStatus` (the library's own encoders for those bindings stay internal).
 */

import {
  decodeStatus,
  type ErrorInfo,
  encodeRestRejection,
  encodeStatus,
  findDetail,
  GRPC_CODES,
  GRPC_METADATA,
  parseErrorBody,
  REASONS,
  type Rejection,
  type readRateLimitHeaders,
  type Status,
} from 'a2a-ratelimit';

/** The public shapes this helper names, read off the public signatures. */
type Detail = Status['details'][number];
type HeadersLike = Parameters<typeof readRateLimitHeaders>[0];
type RejectionEncodeOptions = Parameters<typeof encodeRestRejection>[1];
type RejectionKind = Rejection['kind'];
type RejectionReason = Rejection['reason'];

/** RetryInfo's delay among `details`, ms (undefined when absent or negative). */
function retryInfoDelayMs(details: readonly Detail[]): number | undefined {
  const delay = findDetail(details, 'RetryInfo')?.retryDelay;
  if (delay === undefined) return undefined;
  const ms = Number(delay.seconds) * 1000 + delay.nanos / 1e6;
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** What every binding's rejection carries, read back. */
export interface DecodedRejection {
  readonly kind: RejectionKind;
  readonly reason: RejectionReason;
  readonly domain: string;
  readonly policy: string;
  readonly scope: string;
  readonly method: string;
  /** QuotaFailure violation subject. */
  readonly subject?: string;
  /** RetryInfo delay (or, without RetryInfo, `Retry-After`, then metadata `retryDelay`), seconds. */
  readonly delaySeconds: number;
  /** ErrorInfo metadata `reserved`. */
  readonly reserved?: boolean;
  /** QuotaFailure violation quota value. */
  readonly quotaValue?: number;
  /** ErrorInfo metadata `tier`. */
  readonly tier?: string;
  readonly message: string;
}

/** The JSON-RPC error code a rejection travels with (A2A's InternalError). */
const JSON_RPC_REJECTION_CODE = -32603;

/** The kind each rate-limit ErrorInfo reason stands for. */
export function kindOfReason(reason: string | undefined): RejectionKind | undefined {
  if (reason === REASONS.quota) return 'quota';
  if (reason === REASONS.overload || reason === REASONS.unavailable) {
    return 'overload';
  }
  return undefined;
}

/** A JSON-RPC rejection (HTTP 200, 429 or 503 with an error envelope). */
export function decodeJsonRpcRejection(
  status: number,
  headers: HeadersLike,
  body: string,
): DecodedRejection | undefined {
  const expected = status === 429 ? 'quota' : status === 503 ? 'overload' : undefined;
  if (status !== 200 && expected === undefined) return undefined;
  const parsed = parseErrorBody(body);
  if (parsed?.shape !== 'json-rpc' || parsed.code !== JSON_RPC_REJECTION_CODE) return undefined;
  return readDetails(parsed.details, expected, parsed.message ?? '', retryAfter(headers));
}

/** An HTTP+JSON rejection (429 or 503 with a google.rpc Status body). */
export function decodeRestRejection(
  status: number,
  headers: HeadersLike,
  body: string,
): DecodedRejection | undefined {
  const kind = status === 429 ? 'quota' : status === 503 ? 'overload' : undefined;
  const parsed = parseErrorBody(body);
  if (kind === undefined || parsed?.shape !== 'google-rpc' || parsed.code !== status) {
    return undefined;
  }
  return readDetails(parsed.details, kind, parsed.message ?? '', retryAfter(headers));
}

/** A gRPC rejection: its code, message and trailers (`Metadata.getMap()`). */
export function decodeGrpcRejection(
  code: number,
  message: string,
  trailers: Readonly<Record<string, string | Uint8Array>>,
): DecodedRejection | undefined {
  const kind =
    code === GRPC_CODES.RESOURCE_EXHAUSTED
      ? 'quota'
      : code === GRPC_CODES.UNAVAILABLE
        ? 'overload'
        : undefined;
  const raw = trailers[GRPC_METADATA.statusDetails];
  if (kind === undefined || raw === undefined) return undefined;
  const bytes = typeof raw === 'string' ? Buffer.from(raw, 'base64') : raw;
  let status: Status;
  try {
    status = decodeStatus(bytes);
  } catch {
    return undefined;
  }
  if (status.code !== code) return undefined;
  const after = trailers[GRPC_METADATA.retryAfter];
  return readDetails(
    status.details,
    kind,
    status.message === '' ? message : status.message,
    typeof after === 'string' && /^\s*\d+\s*$/.test(after) ? Number(after) : undefined,
  );
}

function retryAfter(headers: HeadersLike): number | undefined {
  const value =
    'get' in headers && typeof headers.get === 'function'
      ? (headers.get('retry-after') ?? undefined)
      : Object.entries(headers).find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
  if (typeof value !== 'string') return undefined;
  return /^\s*\d+\s*$/.test(value) ? Number(value) : undefined;
}

function rateLimitInfo(details: readonly Detail[]): ErrorInfo | undefined {
  for (const d of details) {
    if (d.type !== 'ErrorInfo') continue;
    const { reason, domain } = d.message;
    if (kindOfReason(reason) !== undefined && domain.toLowerCase() !== 'a2a-protocol.org') {
      return d.message;
    }
  }
  return undefined;
}

function readDetails(
  details: readonly Detail[],
  expected: RejectionKind | undefined,
  message: string,
  retryAfterSeconds: number | undefined,
): DecodedRejection | undefined {
  const info = rateLimitInfo(details);
  const kind = kindOfReason(info?.reason);
  if (info === undefined || kind === undefined) return undefined;
  if (expected !== undefined && kind !== expected) return undefined;
  const policy = info.metadata.policy;
  if (policy === undefined || policy === '') return undefined;
  const retryMs = retryInfoDelayMs(details);
  const metadataDelay = /^(\d+(?:\.\d+)?)s$/.exec(info.metadata.retryDelay ?? '')?.[1];
  const delaySeconds =
    retryMs !== undefined
      ? retryMs / 1000
      : (retryAfterSeconds ?? (metadataDelay === undefined ? undefined : Number(metadataDelay)));
  if (delaySeconds === undefined) return undefined;
  const violation = findDetail(details, 'QuotaFailure')?.violations[0];
  const quotaValue = violation === undefined ? undefined : Number(violation.quotaValue);
  const reserved = info.metadata.reserved;
  const tier = info.metadata.tier;
  return {
    kind,
    reason: info.reason as RejectionReason,
    domain: info.domain,
    policy,
    scope: info.metadata.scope ?? '',
    method: info.metadata.method ?? '',
    ...(violation === undefined || violation.subject === '' ? {} : { subject: violation.subject }),
    delaySeconds,
    ...(reserved === 'true' || reserved === 'false' ? { reserved: reserved === 'true' } : {}),
    ...(quotaValue === undefined || quotaValue === 0 ? {} : { quotaValue }),
    ...(tier === undefined || tier === '' ? {} : { tier }),
    message,
  };
}

/** A JSON-RPC refusal as an agent sends it: HTTP 200, the error envelope, the delay headers. */
export function encodeJsonRpcRejection(
  rejection: Rejection,
  options: RejectionEncodeOptions & { readonly id: string | number | null },
): { status: 200; headers: Record<string, string>; body: string } {
  const rest = encodeRestRejection(rejection, options);
  const { error } = JSON.parse(rest.body) as { error: { message: string; details: unknown[] } };
  return {
    status: 200,
    headers: { ...rest.headers, 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id,
      error: { code: JSON_RPC_REJECTION_CODE, message: error.message, data: error.details },
    }),
  };
}

/** A gRPC refusal: code 8 or 14, the Status in `grpc-status-details-bin`, the delay trailers. */
export function encodeGrpcRejection(
  rejection: Rejection,
  options: RejectionEncodeOptions,
): { code: number; message: string; trailers: Record<string, string | Uint8Array> } {
  const rest = encodeRestRejection(rejection, options);
  const details = parseErrorBody(rest.body)?.details ?? [];
  const code = rejection.kind === 'quota' ? GRPC_CODES.RESOURCE_EXHAUSTED : GRPC_CODES.UNAVAILABLE;
  const { 'content-type': _type, ...delayHeaders } = rest.headers;
  return {
    code,
    message: rejection.message,
    trailers: {
      ...delayHeaders,
      [GRPC_METADATA.statusDetails]: encodeStatus({ code, message: rejection.message, details }),
      [GRPC_METADATA.retryPushback]: String(Number(rest.headers['retry-after']) * 1000),
    },
  };
}
