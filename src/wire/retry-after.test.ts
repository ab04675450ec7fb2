import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHttpDate, parseRetryAfter } from './retry-after.js';

const NOV_6_1994 = Date.UTC(1994, 10, 6, 8, 49, 37);
const NOW = Date.UTC(2026, 0, 1, 0, 0, 0);

describe('parseHttpDate', () => {
  it.each([
    ['Sun, 06 Nov 1994 08:49:37 GMT'],
    ['Sunday, 06-Nov-94 08:49:37 GMT'],
    ['Sun Nov  6 08:49:37 1994'],
  ])('reads %s', (text) => {
    expect(parseHttpDate(text, NOW)).toBe(NOV_6_1994);
  });

  it('reads a two-digit RFC 850 year as the most recent past year within 50 years', () => {
    expect(parseHttpDate('Thursday, 01-Jan-26 00:00:10 GMT', NOW)).toBe(NOW + 10_000);
    expect(parseHttpDate('Monday, 01-Jan-80 00:00:00 GMT', NOW)).toBe(Date.UTC(1980, 0, 1));
  });

  it.each([
    'Sun, 31 Feb 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 24:00:00 GMT',
    'Sun, 06 Foo 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 08:49:37 UTC',
    '1994-11-06T08:49:37Z',
    '',
  ])('rejects %j', (text) => {
    expect(parseHttpDate(text, NOW)).toBeUndefined();
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('12', NOW)).toBe(12_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
    expect(parseRetryAfter('120, 120', NOW)).toBe(120_000);
  });

  it('reads all three date forms relative to nowMs, a past date as 0', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Thursday, 01-Jan-26 00:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Thu Jan  1 00:00:30 2026', NOW)).toBe(30_000);
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(0);
  });

  it.each(['-5', '1.5', 'soon', '12s', '9'.repeat(400), ''])('ignores %j', (text) => {
    expect(parseRetryAfter(text, NOW)).toBeUndefined();
  });

  it('never returns NaN, a negative value or Infinity', () => {
    fc.assert(
      fc.property(fc.string(), fc.double(), (text, now) => {
        const ms = parseRetryAfter(text, now);
        if (ms !== undefined) {
          expect(Number.isFinite(ms)).toBe(true);
          expect(ms).toBeGreaterThanOrEqual(0);
        }
      }),
    );
  });
});
