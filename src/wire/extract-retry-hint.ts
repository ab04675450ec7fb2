/**
 * @module extract-retry-hint
 * `extractRetryHint`: any failed response, in any wire shape, to one `RetryHint` (kind and delay).
 */

import {
  kindOfReason,
  metadataDelayMs,
  metadataKind,
  rateLimitErrorInfo,
  retryInfoDelayMs,
} from './decoded-rejection.js';
import { type ErrorBody, parseErrorBody } from './error-body.js';
import { type ErrorSource, errorSource } from './error-source.js';
import { type Detail, type ErrorInfo, findDetail, GRPC_CODES } from './google-rpc.js';
import {
  binaryMetadataValues,
  type HeaderLookup,
  type HeadersLike,
  headerLookup,
  type MetadataLike,
  type MetadataLookup,
  metadataHeaders,
  metadataLookup,
} from './headers-like.js';
import { tryDecodeStatus } from './proto-binary.js';
import { announcedStates, readRateLimitFields, type SourcedState } from './ratelimit-headers.js';
import { parseRetryAfter } from './retry-after.js';
import type { DelaySource, HintKind, RetryHint } from './retry-hint.js';

/**
 * Anything a client may have in hand after a failed call: an HTTP response (status, headers,
 * body text), a gRPC status (code, message, trailing metadata), or a thrown error of any kind.
 *
 * @example
 * ```ts
 * const fromFetch: RetrySource = { kind: 'http', status: res.status, headers: res.headers, body: await res.text() };
 * const fromGrpc: RetrySource = { kind: 'grpc', code: 8, message: 'rate limited', metadata: { 'grpc-retry-pushback-ms': '12000' } };
 * const fromThrow: RetrySource = { kind: 'error', error: caught };
 * ```
 */
export type RetrySource =
  | {
      readonly kind: 'http';
      readonly status: number;
      readonly headers: HeadersLike;
      readonly body?: string;
    }
  | {
      readonly kind: 'grpc';
      readonly code: number;
      readonly message?: string;
      readonly metadata: MetadataLike;
    }
  | { readonly kind: 'error'; readonly error: unknown };

/** Everything one response said, normalised across transports. */
interface Evidence {
  readonly transport: 'http' | 'grpc' | 'network' | 'other';
  /** HTTP status or gRPC code. */
  readonly status?: number;
  readonly headers: HeaderLookup;
  readonly body?: ErrorBody;
  readonly details: readonly Detail[];
  readonly message?: string;
  /** Raw `grpc-retry-pushback-ms` text (gRPC only). */
  readonly pushback?: string;
}

const NO_HEADERS: HeaderLookup = () => undefined;
const INT32_MAX = 2_147_483_647;

function httpEvidence(status: number | undefined, headers: unknown, body: unknown): Evidence {
  const parsed = typeof body === 'string' ? parseErrorBody(body) : undefined;
  return {
    transport: 'http',
    ...(status === undefined ? {} : { status }),
    headers: headerLookup(headers),
    ...(parsed === undefined ? {} : { body: parsed }),
    details: parsed?.details ?? [],
    ...(parsed?.message === undefined ? {} : { message: parsed.message }),
  };
}

function grpcEvidence(code: number, message: string | undefined, metadata: unknown): Evidence {
  const lookup: MetadataLookup = metadataLookup(metadata);
  const headers = metadataHeaders(lookup);
  let status: ReturnType<typeof tryDecodeStatus>;
  for (const bytes of binaryMetadataValues(lookup, 'grpc-status-details-bin')) {
    status = tryDecodeStatus(bytes);
    if (status !== undefined) break;
  }
  const text = message !== undefined && message !== '' ? message : status?.message;
  const pushback = lookup('grpc-retry-pushback-ms')[0];
  return {
    transport: 'grpc',
    status: code,
    headers,
    details: status?.details ?? [],
    ...(text === undefined || text === '' ? {} : { message: text }),
    ...(pushback === undefined ? {} : { pushback: headers('grpc-retry-pushback-ms') ?? '' }),
  };
}

function evidenceOfError(source: ErrorSource): Evidence {
  switch (source.kind) {
    case 'http': {
      const evidence = httpEvidence(source.status, source.headers, source.body);
      return evidence.message === undefined && source.message !== undefined
        ? { ...evidence, message: source.message }
        : evidence;
    }
    case 'grpc':
      return grpcEvidence(source.code, source.message, source.metadata);
    case 'network':
      return {
        transport: 'network',
        headers: NO_HEADERS,
        details: [],
        message: source.message ?? source.code,
      };
    default:
      return {
        transport: 'other',
        headers: NO_HEADERS,
        details: [],
        ...(source.message === undefined ? {} : { message: source.message }),
      };
  }
}

function evidenceOf(source: RetrySource): Evidence {
  switch (source.kind) {
    case 'http':
      return httpEvidence(
        Number.isInteger(source.status) ? source.status : undefined,
        source.headers,
        source.body,
      );
    case 'grpc':
      return grpcEvidence(source.code, source.message, source.metadata);
    case 'error':
      return evidenceOfError(errorSource(source.error));
    default:
      return { transport: 'other', headers: NO_HEADERS, details: [] };
  }
}

/** `grpc-retry-pushback-ms`: a delay, `'stop'` (negative or unparseable), or absent. */
function parsePushback(text: string | undefined): number | 'stop' | undefined {
  if (text === undefined) return undefined;
  const value = text.split(',')[0]?.trim() ?? '';
  if (!/^-?\d{1,10}$/.test(value)) return 'stop';
  const ms = Number(value);
  return ms < 0 || ms > INT32_MAX ? 'stop' : ms;
}

/**
 * The state whose `t` is the delay: the one named by the rejection's policy, else the one with
 * the smallest remaining (ties: the longest reset). Only an exhausted (or count-less) state
 * gives a delay — `t` of a state with quota left is a window, not a wait.
 */
function delayState(
  states: readonly SourcedState[],
  form: SourcedState['form'],
  policy: string | undefined,
): SourcedState | undefined {
  const candidates = states.filter((s) => s.form === form);
  const named = policy === undefined ? undefined : candidates.find((s) => s.policy === policy);
  if (named !== undefined) return named;
  let best: SourcedState | undefined;
  for (const s of candidates) {
    const r = s.remaining ?? Number.POSITIVE_INFINITY;
    const bestR = best?.remaining ?? Number.POSITIVE_INFINITY;
    if (
      best === undefined ||
      r < bestR ||
      (r === bestR && (s.resetSeconds ?? -1) > (best.resetSeconds ?? -1))
    ) {
      best = s;
    }
  }
  return best;
}

function stateDelayMs(state: SourcedState | undefined): number | undefined {
  if (state?.resetSeconds === undefined || (state.remaining ?? 0) > 0) return undefined;
  return state.resetSeconds * 1000;
}

function problemKind(body: ErrorBody | undefined): 'quota' | 'overload' | undefined {
  const type = body?.problemType;
  if (type === undefined) return undefined;
  if (type.endsWith('#quota-exceeded') || type.endsWith('#abnormal-usage-detected')) return 'quota';
  if (type.endsWith('#temporary-reduced-capacity')) return 'overload';
  return undefined;
}

/**
 * HTTP: 429 → quota, 503 → overload; the spec's own "rate limit exceeded" examples — 500 and a
 * JSON-RPC -32603 (usually inside HTTP 200) — are a refusal with a hint when they carry retry
 * guidance (read as the caller's quota: overload has its own code), else transient-unknown, as
 * are 502 / 504.
 */
function classifyHttp(e: Evidence, guided: boolean): HintKind {
  const kind = problemKind(e.body);
  if (kind !== undefined) return kind;
  switch (e.status) {
    case 429:
      return 'quota';
    case 503:
      return 'overload';
    case 500:
      return guided ? 'quota' : 'transient-unknown';
    case 502:
    case 504:
      return 'transient-unknown';
  }
  if (e.body?.shape === 'json-rpc' && e.body.code === -32603) {
    return guided ? 'quota' : 'transient-unknown';
  }
  return 'not-retryable';
}

/**
 * gRPC: with retry guidance, RESOURCE_EXHAUSTED and INTERNAL → quota, UNAVAILABLE → overload;
 * without any, RESOURCE_EXHAUSTED is a local error (e.g. message too large), UNAVAILABLE, INTERNAL
 * and UNKNOWN are transient-unknown (a dropped connection says UNAVAILABLE too).
 */
function classifyGrpc(e: Evidence, guided: boolean): HintKind {
  switch (e.status) {
    case GRPC_CODES.RESOURCE_EXHAUSTED:
      return guided ? 'quota' : 'not-retryable';
    case GRPC_CODES.UNAVAILABLE:
      return guided ? 'overload' : 'transient-unknown';
    case GRPC_CODES.INTERNAL:
      return guided ? 'quota' : 'transient-unknown';
    case GRPC_CODES.UNKNOWN:
      return 'transient-unknown';
    default:
      return 'not-retryable';
  }
}

function classify(
  e: Evidence,
  info: ErrorInfo | undefined,
  metadata: Readonly<Record<string, string>> | undefined,
  guided: boolean,
): HintKind {
  const byReason = kindOfReason(info?.reason) ?? metadataKind(metadata);
  if (byReason !== undefined) return byReason;
  switch (e.transport) {
    case 'http':
      return classifyHttp(e, guided);
    case 'grpc':
      return classifyGrpc(e, guided);
    case 'network':
      return 'transient-unknown';
    default:
      return 'not-retryable';
  }
}

/** The first defined delay in precedence order, as whole milliseconds. */
function pickDelay(
  candidates: readonly (readonly [DelaySource, number | undefined])[],
): { delayMs: number; delaySource: DelaySource } | undefined {
  for (const [delaySource, ms] of candidates) {
    if (ms !== undefined && Number.isFinite(ms) && ms >= 0) {
      return { delayMs: Math.ceil(ms), delaySource };
    }
  }
  return undefined;
}

function reservedOf(metadata: Readonly<Record<string, string>> | undefined): {
  reserved?: boolean;
} {
  const value = metadata?.reserved;
  return value === 'true' ? { reserved: true } : value === 'false' ? { reserved: false } : {};
}

/**
 * The metadata of a rejection, for what it repeats (`retryDelay`, `kind`, `policy`): our
 * rate-limit ErrorInfo's; else the first ErrorInfo whose metadata carries one of those keys in any
 * domain (an SDK re-wrapping our error keeps its metadata); else a JSON-RPC `data` object that is
 * only such metadata (what a2a-python forwards). `ours` says whether it is from one of our reasons
 * or carries `kind` (so its `policy` names a limiter's policy).
 */
function rejectionMetadata(
  e: Evidence,
  rateInfo: ErrorInfo | undefined,
): { metadata?: Readonly<Record<string, string>>; ours: boolean } {
  if (rateInfo !== undefined) return { metadata: rateInfo.metadata, ours: true };
  const carries = (m: Readonly<Record<string, string>>): boolean =>
    metadataKind(m) !== undefined || metadataDelayMs(m) !== undefined;
  for (const d of e.details) {
    if (d.type === 'ErrorInfo' && carries(d.message.metadata)) {
      return { metadata: d.message.metadata, ours: metadataKind(d.message.metadata) !== undefined };
    }
  }
  const data = e.body?.dataMetadata;
  if (data !== undefined && carries(data)) {
    return { metadata: data, ours: metadataKind(data) !== undefined };
  }
  return { ours: false };
}

function hintOf(e: Evidence, nowMs: number): RetryHint {
  const rateInfo = rateLimitErrorInfo(e.details);
  const info = rateInfo ?? findDetail(e.details, 'ErrorInfo');
  const { metadata, ours } = rejectionMetadata(e, rateInfo);
  const namedPolicy =
    (ours ? nonEmpty(metadata?.policy) : undefined) ?? e.body?.violatedPolicies?.[0];
  const { policies, states } = readRateLimitFields(e.headers, nowMs);
  const rateState = delayState(states, 'ratelimit', namedPolicy);
  const pushback = parsePushback(e.pushback);
  const delay = pickDelay([
    ['retry-info', retryInfoDelayMs(e.details)],
    ['retry-after', parseRetryAfter(e.headers('retry-after'), nowMs)],
    ['ratelimit', stateDelayMs(rateState)],
    ['x-ratelimit', stateDelayMs(delayState(states, 'x-ratelimit', undefined))],
    ['grpc-pushback', typeof pushback === 'number' ? pushback : undefined],
    ['error-info-metadata', metadataDelayMs(metadata)],
  ]);
  const kind = classify(e, rateInfo, metadata, delay !== undefined || pushback !== undefined);
  const policy = namedPolicy ?? rateState?.policy;
  const announced = announcedStates(states);
  return {
    kind,
    ...(delay ?? {}),
    ...(delay === undefined && pushback === 'stop' ? { doNotRetry: true } : {}),
    ...(policy === undefined ? {} : { policy }),
    ...(info === undefined || info.reason === '' ? {} : { reason: info.reason }),
    ...(info === undefined || info.domain === '' ? {} : { domain: info.domain }),
    ...(ours ? reservedOf(metadata) : {}),
    ...(e.status === undefined ? {} : { status: e.status }),
    ...(e.message === undefined ? {} : { message: e.message }),
    ...(policies.length === 0 ? {} : { policies }),
    ...(announced.length === 0 ? {} : { states: announced }),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/**
 * Reads a failed call's retry guidance from any wire shape (docs/architecture.md, "The client").
 * Pure (time comes in as `nowMs`) and never throws.
 *
 * Delay precedence: RetryInfo, `Retry-After` (delta-seconds or HTTP-date relative to `nowMs`; a
 * past date is 0), `RateLimit` `t` of the rejecting (or smallest-`r`) exhausted item, `X-RateLimit`
 * reset, `grpc-retry-pushback-ms`, and last the ErrorInfo metadata `retryDelay` (also from a
 * JSON-RPC `data` that is only that metadata). Malformed values are ignored; `delayMs` is always
 * finite, whole and ≥ 0. A negative or garbage pushback sets `doNotRetry` only when no other delay
 * was given.
 *
 * Kind: an ErrorInfo reason `RATE_LIMIT_EXCEEDED` / `AGENT_OVERLOADED` outside `a2a-protocol.org`
 * decides, else the metadata `kind`; else HTTP 429 → quota, 503 → overload; the spec's examples
 * 500 / JSON-RPC -32603 / gRPC INTERNAL → quota when they carry retry guidance (any delay above, or
 * a pushback), else transient-unknown; 502/504, gRPC UNKNOWN → transient-unknown; gRPC
 * RESOURCE_EXHAUSTED → quota only with guidance (else a local error: not-retryable), UNAVAILABLE →
 * overload with guidance, else transient-unknown; a broken connection → transient-unknown;
 * everything else → not-retryable.
 *
 * @example
 * ```ts
 * const hint = extractRetryHint({ kind: 'http', status: 429, headers: res.headers, body }, clock.nowMs());
 * if (hint.kind === 'quota' && hint.delayMs !== undefined) await sleep(hint.delayMs + jitterMs);
 * ```
 */
export function extractRetryHint(source: RetrySource, nowMs: number): RetryHint {
  try {
    return hintOf(evidenceOf(source), nowMs);
  } catch {
    // Only reachable through hostile inputs (e.g. a Proxy that throws on every property read).
    return { kind: 'not-retryable' };
  }
}
