import { describe, expect, it } from 'vitest';
import {
  callWithinLimits,
  EXECUTOR_ERROR_CODES,
  isLimitedCallFailedError,
  LimitedCallFailedError,
  TASK_STATES,
} from './call-within-limits.js';

describe('LimitedCallFailedError', () => {
  it('has a stable code and a brand its guard reads (also on a copy from another install)', async () => {
    const events: { kind: string; data: { status: { state: number } } }[] = [];
    const error = await callWithinLimits(
      () => Promise.reject(Object.assign(new Error('quota'), { status: 429 })),
      {
        bus: { publish: (e) => events.push(e) },
        taskId: 't',
        contextId: 'c',
        maxAttempts: 1,
        toRetrySource: () => ({ kind: 'http', status: 429, headers: { 'retry-after': '2' } }),
        sleep: () => Promise.resolve(),
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LimitedCallFailedError);
    expect(isLimitedCallFailedError(error)).toBe(true);
    expect((error as LimitedCallFailedError).code).toBe('ERR_A2A_LIMITED_CALL_FAILED');
    expect(EXECUTOR_ERROR_CODES.limitedCallFailed).toBe('ERR_A2A_LIMITED_CALL_FAILED');
    expect((error as LimitedCallFailedError).attempts).toBe(1);
    expect(events.map((e) => e.data.status.state)).toEqual([TASK_STATES.failed]);
    // Another copy of the package: not the same class, the same brand.
    expect(isLimitedCallFailedError({ isLimitedCallFailedError: true, code: 'x' })).toBe(true);
    expect(isLimitedCallFailedError(new Error('quota'))).toBe(false);
    expect(isLimitedCallFailedError(undefined)).toBe(false);
    expect({ isLimitedCallFailedError: true, code: 'x' } instanceof LimitedCallFailedError).toBe(
      true,
    );
    expect(new Error('quota') instanceof LimitedCallFailedError).toBe(false);
  });
});
