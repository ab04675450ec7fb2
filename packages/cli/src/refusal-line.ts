/**
 * @module refusal-line
 * `gateway --log-refusals`: one escaped, length-capped log line per refused request.
 */

import type { GatewayRefusal } from 'a2a-ratelimit-gateway';

/** Longest caller-chosen value written, in characters (longer ones end in `…`). */
export const MAX_LOGGED_VALUE_CHARS = 128;

/** Control (C0, DEL, C1), format (bidi overrides, zero-width) and line/paragraph separators. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}"\\]/gu;

/**
 * A value as one double-quoted token: `"` and `\` backslash-escaped, control and invisible
 * characters as `\uXXXX`, at most {@link MAX_LOGGED_VALUE_CHARS} characters of the value kept.
 *
 * @example
 * ```ts
 * quoteLogValue('eve\nforged line'); // '"eve\\u000aforged line"'
 * ```
 */
export function quoteLogValue(value: string): string {
  const chars = Array.from(value);
  const kept =
    chars.length > MAX_LOGGED_VALUE_CHARS
      ? `${chars.slice(0, MAX_LOGGED_VALUE_CHARS).join('')}…`
      : value;
  const escaped = kept.replace(UNSAFE, (c) =>
    c === '"' || c === '\\'
      ? `\\${c}`
      : `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`,
  );
  return `"${escaped}"`;
}

/** A bare token (operator-chosen or from a bounded set) unless it needs quoting. */
function token(value: string): string {
  return /^[\w.:/-]{1,128}$/u.test(value) ? value : quoteLogValue(value);
}

/**
 * One refusal as a single log line (no trailing newline): the time in ISO 8601, then `key=value`
 * fields; the caller and tenant (caller-chosen) always quoted and escaped.
 *
 * @example
 * ```ts
 * refusalLine({ caller: 'alice', method: 'SendMessage', binding: 'jsonrpc', status: 429,
 *   policy: 'per-caller', reason: 'RATE_LIMIT_EXCEEDED', retryAfterMs: 12000 }, new Date(0));
 * // '1970-01-01T00:00:00.000Z refused status=429 reason=RATE_LIMIT_EXCEEDED policy=per-caller retryAfterMs=12000 method=SendMessage binding=jsonrpc caller="alice"'
 * ```
 */
export function refusalLine(refusal: GatewayRefusal, at: Date): string {
  const fields = [
    `status=${refusal.status}`,
    `reason=${token(refusal.reason ?? 'REFUSED')}`,
    `policy=${token(refusal.policy)}`,
    ...(refusal.retryAfterMs === undefined ? [] : [`retryAfterMs=${refusal.retryAfterMs}`]),
    `method=${token(refusal.method)}`,
    `binding=${token(refusal.binding)}`,
    `caller=${quoteLogValue(refusal.caller)}`,
    ...(refusal.tenant === undefined ? [] : [`tenant=${quoteLogValue(refusal.tenant)}`]),
  ];
  return `${at.toISOString()} refused ${fields.join(' ')}`;
}
