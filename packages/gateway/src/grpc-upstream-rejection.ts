/**
 * @module grpc-upstream-rejection
 * The upstream's own gRPC refusal with a delay, re-encoded as our quota / overload rejection. Pure.
 */

import type { IncomingHttpHeaders } from 'node:http2';
import { type A2AMethod, extractRetryHint, type Rejection } from 'a2a-ratelimit';
import { refusalByUpstream } from './upstream-failure.js';

const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;

/** A `grpc-message` value decoded (percent-encoding undone; left as it is when it is not valid). */
function grpcMessageText(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * The rejection an upstream's status fields (its Trailers-Only headers or its trailers) become,
 * or undefined when they pass through untouched.
 *
 * @example
 * ```ts
 * grpcUpstreamRejection('SendMessage', { 'grpc-status': '8', 'retry-after': '3' }, Date.now())?.retryAfterMs; // 3000
 * ```
 */
export function grpcUpstreamRejection(
  method: A2AMethod,
  fields: IncomingHttpHeaders,
  nowMs: number,
): Rejection | undefined {
  const code = Number(fields['grpc-status']);
  if (code !== RESOURCE_EXHAUSTED && code !== UNAVAILABLE) return undefined;
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (name.startsWith(':') || value === undefined) continue;
    metadata[name] = Array.isArray(value) ? value.join(',') : String(value);
  }
  const message = grpcMessageText(fields['grpc-message']);
  const hint = extractRetryHint(
    { kind: 'grpc', code, metadata, ...(message === undefined ? {} : { message }) },
    nowMs,
  );
  const ms = hint.delayMs;
  if (ms === undefined || hint.doNotRetry === true) return undefined;
  return code === RESOURCE_EXHAUSTED
    ? refusalByUpstream(method, 'quota', ms, 'gRPC RESOURCE_EXHAUSTED')
    : refusalByUpstream(method, 'overload', ms, 'gRPC UNAVAILABLE');
}
