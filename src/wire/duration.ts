/**
 * @module duration
 * `google.protobuf.Duration`: ProtoJSON text both ways, milliseconds, and retry delays past
 * protobuf's range.
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
 * The longest duration protobuf allows: 315,576,000,000 s (10,000 years).
 *
 * @example
 * ```ts
 * durationToMs(MAX_DURATION); // 315_576_000_000_000
 * ```
 */
export const MAX_DURATION: Duration = Object.freeze({
  seconds: MAX_DURATION_SECONDS,
  nanos: 0,
});

const POSITIVE_JSON_DURATION = /^0*(\d*)(?:\.\d{1,9})?s$/;

/**
 * A `RetryInfo.retry_delay` as a client should read it: a valid duration as it is (a negative one
 * too: the reader ignores it); a positive one past protobuf's range (int64-max seconds over gRPC)
 * as {@link MAX_DURATION}, so an agent asking for longer than protobuf can say still asks for too
 * long (not for nothing, which would mean backing off and retrying); anything else (past the range
 * below zero, mixed signs, nanos out of range) undefined.
 *
 * @example
 * ```ts
 * retryDelayOf({ seconds: 12n, nanos: 0 });                   // { seconds: 12n, nanos: 0 }
 * retryDelayOf({ seconds: 9_223_372_036_854_775_807n, nanos: 0 }); // MAX_DURATION
 * retryDelayOf({ seconds: -(2n ** 63n), nanos: 0 });         // undefined
 * ```
 */
export function retryDelayOf(duration: Duration): Duration | undefined {
  const { seconds, nanos } = duration;
  if (seconds > MAX_DURATION_SECONDS && Number.isInteger(nanos) && nanos >= 0) {
    return nanos < NANOS_PER_SECOND ? MAX_DURATION : undefined;
  }
  return isValidDuration(duration) ? duration : undefined;
}

/**
 * {@link parseJsonDuration} for a `RetryInfo.retryDelay`: the same, but a positive duration past
 * protobuf's range (`"999999999999s"`, any number of digits) reads as {@link MAX_DURATION}.
 *
 * @example
 * ```ts
 * parseJsonRetryDelay('12s');            // { seconds: 12n, nanos: 0 }
 * parseJsonRetryDelay('999999999999s');  // MAX_DURATION
 * parseJsonRetryDelay('-999999999999s'); // undefined
 * ```
 */
export function parseJsonRetryDelay(text: unknown): Duration | undefined {
  const parsed = parseJsonDuration(text);
  if (parsed !== undefined || typeof text !== 'string') return parsed;
  const digits = POSITIVE_JSON_DURATION.exec(text)?.[1];
  if (digits === undefined) return undefined;
  // Past 12 significant digits, or past the range at 12: longer than protobuf can say.
  if (digits.length > 12 || BigInt(digits) > MAX_DURATION_SECONDS) return MAX_DURATION;
  return parseJsonDuration(text.replace(/^0+(?=\d)/, '')); // in range, zero-padded
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
