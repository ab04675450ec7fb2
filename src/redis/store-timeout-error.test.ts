import { describe, expect, it } from 'vitest';
import {
  isStoreTimeoutError,
  REDIS_STORE_ERROR_CODES,
  StoreTimeoutError,
} from './store-timeout-error.js';

describe('StoreTimeoutError', () => {
  it('has a stable code and is recognised by its brand, also from another copy', () => {
    const e = new StoreTimeoutError(50);
    expect(e.code).toBe(REDIS_STORE_ERROR_CODES.timeout);
    expect(e.code).toBe('ERR_A2A_STORE_TIMEOUT');
    expect(e.timeoutMs).toBe(50);
    expect(isStoreTimeoutError(e)).toBe(true);
    const copy = Object.assign(new Error('x'), { isStoreTimeoutError: true, timeoutMs: 5 });
    expect(isStoreTimeoutError(copy)).toBe(true);
    expect(isStoreTimeoutError(new Error('Redis store call took longer'))).toBe(false);
    expect(isStoreTimeoutError(Object.create({ isStoreTimeoutError: true }))).toBe(false);
    expect(isStoreTimeoutError(undefined)).toBe(false);
    // `instanceof` checks the same brand.
    expect(e instanceof StoreTimeoutError && copy instanceof StoreTimeoutError).toBe(true);
    expect(new Error('x') instanceof StoreTimeoutError).toBe(false);
  });
});
