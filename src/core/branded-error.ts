/**
 * @module branded-error
 * `BrandedError`, the one base of this package's errors (name, code, brand), and its guard.
 */

import { hasErrorBrand } from './error-brand.js';

/**
 * An error of this package: `name`, `code` and the brand `is<name>` set together.
 *
 * @example
 * ```ts
 * class ExampleError extends BrandedError<'ERR_EXAMPLE'> {
 *   declare readonly isExampleError: true;
 *   constructor() { super('ExampleError', 'ERR_EXAMPLE', 'example'); }
 * }
 * ```
 */
export abstract class BrandedError<Code extends string> extends Error {
  /** Stable code of the error (one of its module's `*_ERROR_CODES`). */
  readonly code: Code;

  protected constructor(name: string, code: Code, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = name;
    // An own, enumerable data property, as a class field `is<name> = true` would be.
    Object.defineProperty(this, `is${name}`, {
      value: true,
      enumerable: true,
      writable: true,
      configurable: true,
    });
    this.code = code;
  }
}

/**
 * Whether `value` is an error named `name` of any installed copy of this package (it carries the
 * own brand property `is<name>: true`).
 *
 * @example
 * ```ts
 * isBrandedError(new PolicyError('p', 'limit', 'must be positive'), 'PolicyError'); // true
 * ```
 */
export function isBrandedError(value: unknown, name: string): boolean {
  return hasErrorBrand(value, `is${name}`);
}
