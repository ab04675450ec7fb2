/**
 * @module error-brand
 * How every error of this package is recognised across duplicate installs: one own brand
 * property `is<Name>: true`, one check (used by `BrandedError`, the guards and `instanceof`).
 */

/**
 * Whether `value` is an object carrying the own property `brand` set to `true`. Each error class of
 * this package sets its brand (`is<Name>`, readonly) so it is recognised where `instanceof` fails.
 *
 * @example
 * ```ts
 * hasErrorBrand(new PolicyError('p', 'limit', 'must be positive'), 'isPolicyError'); // true
 * hasErrorBrand({ isPolicyError: 'yes' }, 'isPolicyError'); // false
 * ```
 */
export function hasErrorBrand(value: unknown, brand: string): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.hasOwn(value, brand) &&
    (value as Record<string, unknown>)[brand] === true
  );
}
