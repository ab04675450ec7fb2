/**
 * @module positive-option
 * The one check of a numeric option that must be positive: a default when left out, a `RangeError`
 * naming it when wrong.
 */

/**
 * `value`, or `fallback` when `value` is undefined. Throws a `RangeError` naming `name` (e.g.
 * `createLimiter: dedup.ttlSeconds`) when the value is not a positive finite number, or, with
 * `integer`, not a positive safe integer.
 *
 * @example
 * ```ts
 * positiveOption('createLimiter: dedup.ttlSeconds', options.ttlSeconds, 900); // 900 when left out
 * positiveOption('MemoryStore: maxKeys', 0, 100_000, { integer: true }); // throws RangeError
 * ```
 */
export function positiveOption(
  name: string,
  value: number | undefined,
  fallback: number,
  check: { readonly integer?: boolean } = {},
): number {
  if (value === undefined) return fallback;
  const ok =
    check.integer === true
      ? Number.isSafeInteger(value) && value > 0
      : typeof value === 'number' && value > 0 && Number.isFinite(value);
  if (!ok) {
    throw new RangeError(
      `${name} must be a positive ${check.integer === true ? 'integer' : 'number'}, got ${String(value)}`,
    );
  }
  return value;
}
