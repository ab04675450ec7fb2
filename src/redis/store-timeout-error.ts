/**
 * @module store-timeout-error
 * `StoreTimeoutError`: a store call that outlived its deadline, its code and guard.
 */

import { BrandedError, isBrandedError } from '../core/branded-error.js';

/**
 * Stable `code` strings of the Redis store's errors.
 *
 * @example
 * ```ts
 * if (error.code === REDIS_STORE_ERROR_CODES.timeout) retryLater();
 * ```
 */
export const REDIS_STORE_ERROR_CODES = {
  timeout: 'ERR_A2A_STORE_TIMEOUT',
} as const;

/**
 * A store call that took longer than `timeoutMs`. Recognise it with `instanceof` (any copy of this
 * package) or its `code`.
 */
export class StoreTimeoutError extends BrandedError<typeof REDIS_STORE_ERROR_CODES.timeout> {
  declare readonly name: 'StoreTimeoutError';
  /** Brand checked by `instanceof` (across copies of this package). */
  declare readonly isStoreTimeoutError: true;
  /** The limit that was exceeded, ms. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(
      'StoreTimeoutError',
      REDIS_STORE_ERROR_CODES.timeout,
      `Redis store call took longer than ${timeoutMs} ms`,
    );
    this.timeoutMs = timeoutMs;
  }

  /**
   * `instanceof` recognises a StoreTimeoutError of any installed copy of this package: it checks the brand
   * (`isStoreTimeoutError: true`, an own property), not the prototype chain.
   */
  static override [Symbol.hasInstance](value: unknown): value is StoreTimeoutError {
    return isStoreTimeoutError(value);
  }
}

/**
 * Whether `value` is a {@link StoreTimeoutError} from any copy of this package.
 *
 * @example
 * ```ts
 * catch (e) { if (isStoreTimeoutError(e)) console.log(`no answer within ${e.timeoutMs} ms`); }
 * ```
 */
export function isStoreTimeoutError(value: unknown): value is StoreTimeoutError {
  return isBrandedError(value, 'StoreTimeoutError');
}
