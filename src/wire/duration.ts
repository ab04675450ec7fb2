/**
 * @module duration
 * `google.protobuf.Duration` conversions: ProtoJSON strings (`"12s"`, `"1.500s"`) both ways, and
 * to / from milliseconds.
 */

import type { Duration } from './google-rpc.js';

/** ±315,576,000,000 s: the range protobuf allows. */
const MAX_DURATION_SECONDS = 315_576_000_000n;
const NANOS_PER_SECOND = 1_000_000_000;
const JSON_DURATION = /^(-)?(\d{1,12})(?:\.(\d{1,9}))?s$/;

/**
 * Canonical ProtoJSON text of a duration: whole seconds as `"12s"`, otherwise 3, 6 or 9
 * fractional digits (`"1.500s"`, `"0.000001s"`), with a leading `-` when negative.
 *
 * @example
 * ```ts
 * formatJsonDuration({ seconds: 12n, nanos: 0 });           // '12s'
 * formatJsonDuration({ seconds: 1n, nanos: 500_000_000 });  // '1.500s'
 * ```
 */
export function formatJsonDuration(duration: Duration): string {
  const negative = duration.seconds < 0n || duration.nanos < 0;
  const seconds = duration.seconds < 0n ? -duration.seconds : duration.seconds;
  const nanos = Math.abs(duration.nanos);
  const sign = negative ? '-' : '';
  if (nanos === 0) return `${sign}${seconds}s`;
  let fraction = String(nanos).padStart(9, '0');
  if (fraction.endsWith('000000')) fraction = fraction.slice(0, 3);
  else if (fraction.endsWith('000')) fraction = fraction.slice(0, 6);
  return `${sign}${seconds}.${fraction}s`;
}

/**
 * Parses a ProtoJSON duration string with 0–9 fractional digits; `undefined` for anything else
 * (wrong type, no `s` suffix, out of protobuf's range).
 *
 * @example
 * ```ts
 * parseJsonDuration('1.5s');  // { seconds: 1n, nanos: 500_000_000 }
 * parseJsonDuration('12');    // undefined
 * ```
 */
export function parseJsonDuration(text: unknown): Duration | undefined {
  if (typeof text !== 'string') return undefined;
  const match = JSON_DURATION.exec(text);
  if (match === null) return undefined;
  const [, minus, whole = '0', fraction = ''] = match;
  const seconds = BigInt(whole);
  const nanos = fraction === '' ? 0 : Number(fraction.padEnd(9, '0'));
  if (seconds > MAX_DURATION_SECONDS) return undefined;
  if (minus === undefined) return { seconds, nanos };
  return { seconds: seconds === 0n ? 0n : -seconds, nanos: nanos === 0 ? 0 : -nanos };
}

/**
 * A duration in milliseconds (possibly fractional; negative for a negative duration).
 *
 * @example
 * ```ts
 * durationToMs({ seconds: 1n, nanos: 500_000_000 }); // 1500
 * ```
 */
export function durationToMs(duration: Duration): number {
  return Number(duration.seconds) * 1000 + duration.nanos / 1_000_000;
}

/**
 * A whole number of seconds as a duration.
 *
 * @example
 * ```ts
 * durationFromSeconds(12); // { seconds: 12n, nanos: 0 }
 * ```
 */
export function durationFromSeconds(delaySeconds: number): Duration {
  return { seconds: BigInt(Math.trunc(delaySeconds)), nanos: 0 };
}

/**
 * Whether a decoded duration is within protobuf's range and its parts agree in sign.
 *
 * @example
 * ```ts
 * isValidDuration({ seconds: 1n, nanos: -1 }); // false
 * ```
 */
export function isValidDuration(duration: Duration): boolean {
  const { seconds, nanos } = duration;
  if (seconds > MAX_DURATION_SECONDS || seconds < -MAX_DURATION_SECONDS) return false;
  if (!Number.isInteger(nanos) || Math.abs(nanos) >= NANOS_PER_SECOND) return false;
  return !((seconds > 0n && nanos < 0) || (seconds < 0n && nanos > 0));
}
