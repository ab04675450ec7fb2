import { describe, expect, it } from 'vitest';
import { countAttempts } from './call-outcomes.js';

describe('countAttempts', () => {
  it('counts first sends (at once or paced), first and later retries, and rejected retries', () => {
    const counts = countAttempts([
      { call: 'a', attemptIndex: 0, admitted: true },
      { call: 'b', attemptIndex: 0, admitted: false },
      { call: 'b', attemptIndex: 1, admitted: true },
      { call: 'c', attemptIndex: 0, admitted: false },
      { call: 'c', attemptIndex: 1, admitted: false },
      { call: 'c', attemptIndex: 2, admitted: true },
      { call: 'd', attemptIndex: 0, admitted: true, paced: true },
      { call: 'e', attemptIndex: 0, admitted: false, paced: true },
      { call: 'e', attemptIndex: 1, admitted: true },
    ]);
    expect(counts).toEqual({
      admittedAtOnce: 1,
      admittedPaced: 1,
      rejected: 3,
      admittedOnFirstRetry: 2,
      admittedOnLaterRetry: 1,
      laterRetries: 1,
      rejectedRetries: 1,
      requestsSeenByAgent: 9,
    });
  });
});
