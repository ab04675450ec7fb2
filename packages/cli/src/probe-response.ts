/**
 * @module probe-response
 * Naming what came back to `probe`, for its messages: the content and a one-line summary per
 * binding.
 */

import { GRPC_CODES, parseErrorBody } from 'a2a-ratelimit';
import { PROBE_MAX_BODY_BYTES } from './probe-capped-body.js';
import type { CapturedResponse } from './probe-transport.js';

/** gRPC status names by code (`8` → `RESOURCE_EXHAUSTED`). */
export const GRPC_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(GRPC_CODES).map(([name, code]) => [code, name]),
);

/**
 * A short description of what came back, for messages: `text/html`, `an empty body`, …
 *
 * @example
 * ```ts
 * describeContent({ mediaType: 'text/html', body: '<html>' } as CapturedResponse); // 'text/html (a gateway page?)'
 * ```
 */
export function describeContent(
  response: Pick<CapturedResponse, 'mediaType' | 'body' | 'truncated'>,
): string {
  if (response.body.trim() === '') return 'an empty body';
  const type = response.mediaType ?? 'no Content-Type';
  const cut =
    response.truncated === true
      ? `, a body longer than ${PROBE_MAX_BODY_BYTES} bytes (not read past that)`
      : '';
  if (type === 'text/html' || /^\s*<(!doctype|html)/i.test(response.body)) {
    return `${type} (a gateway page?)${cut}`;
  }
  return `${type}${cut}`;
}

/**
 * A one-line summary of any response: `HTTP 429 application/a2a+json`, `gRPC UNAVAILABLE: …`,
 * `JSON-RPC error -32601 Method not found`.
 *
 * @example
 * ```ts
 * summarizeResponse(captured); // 'HTTP 502 text/html (a gateway page?)'
 * ```
 */
export function summarizeResponse(response: CapturedResponse): string {
  if (response.binding === 'grpc') {
    const name = GRPC_NAMES[response.status] ?? String(response.status);
    return `gRPC ${name} (${response.status})${response.body ? `: ${response.body}` : ''}`;
  }
  const parsed = parseErrorBody(response.body);
  if (parsed?.shape === 'json-rpc') {
    return `HTTP ${response.status}, JSON-RPC error ${parsed.code ?? '?'}${parsed.message ? ` ${parsed.message}` : ''}`;
  }
  if (parsed !== undefined) {
    return `HTTP ${response.status} ${response.mediaType ?? ''}${parsed.message ? `: ${parsed.message}` : ''}`.trim();
  }
  return `HTTP ${response.status} ${describeContent(response)}`;
}
