/**
 * @module error-brand
 * How every error of this package is recognised across duplicate installs (where `instanceof`
 * fails): a readonly own property `is<Name>: true` set by the class, checked by one function.
 * `BrandedError` (`branded-error.ts`, the errors' one base) sets and checks it; the client's and
 * the executor's errors still set theirs as class fields.
 */

/**
 * Whether `value` is an object carrying the own property `brand` set to `true`.
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
