import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  durationFromSeconds,
  durationToMs,
  formatJsonDuration,
  isValidDuration,
  MAX_DURATION,
  parseJsonDuration,
  parseJsonRetryDelay,
  retryDelayOf,
} from './duration.js';

describe('formatJsonDuration', () => {
  it.each([
    [{ seconds: 12n, nanos: 0 }, '12s'],
    [{ seconds: 0n, nanos: 0 }, '0s'],
    [{ seconds: 1n, nanos: 500_000_000 }, '1.500s'],
    [{ seconds: 3n, nanos: 1_000 }, '3.000001s'],
    [{ seconds: 0n, nanos: 1 }, '0.000000001s'],
    [{ seconds: -1n, nanos: -500_000_000 }, '-1.500s'],
    [{ seconds: 0n, nanos: -250_000_000 }, '-0.250s'],
  ])('%o → %s', (duration, expected) => {
    expect(formatJsonDuration(duration)).toBe(expected);
  });
});

describe('parseJsonDuration', () => {
  it.each([
    ['12s', { seconds: 12n, nanos: 0 }],
    ['1.5s', { seconds: 1n, nanos: 500_000_000 }],
    ['1.500s', { seconds: 1n, nanos: 500_000_000 }],
    ['0.000000001s', { seconds: 0n, nanos: 1 }],
    ['-0.25s', { seconds: 0n, nanos: -250_000_000 }],
    ['315576000000s', { seconds: 315_576_000_000n, nanos: 0 }],
  ])('%s', (text, expected) => {
    expect(parseJsonDuration(text)).toEqual(expected);
  });

  it.each(['12', '12 s', 's', '1.s', '1.0000000001s', '315576000001s', '+1s', '1e3s', '', ' 12s'])(
    'rejects %j',
    (text) => {
      expect(parseJsonDuration(text)).toBeUndefined();
    },
  );

  it('rejects non-strings', () => {
    expect(parseJsonDuration(12)).toBeUndefined();
    expect(parseJsonDuration(null)).toBeUndefined();
  });

  it('round-trips every valid duration through its canonical text', () => {
    const arb = fc
      .record({
        seconds: fc.bigInt({ min: 0n, max: 315_576_000_000n }),
        nanos: fc.integer({ min: 0, max: 999_999_999 }),
        negative: fc.boolean(),
      })
      .map(({ seconds, nanos, negative }) =>
        negative ? { seconds: -seconds, nanos: nanos === 0 ? 0 : -nanos } : { seconds, nanos },
      );
    fc.assert(
      fc.property(arb, (d) => {
        expect(isValidDuration(d)).toBe(true);
        const parsed = parseJsonDuration(formatJsonDuration(d));
        expect(parsed).toEqual(d.seconds === 0n && d.nanos === 0 ? { seconds: 0n, nanos: 0 } : d);
      }),
    );
  });
});

describe('conversions', () => {
  it('converts to milliseconds and from seconds', () => {
    expect(durationToMs({ seconds: 1n, nanos: 500_000_000 })).toBe(1500);
    expect(durationFromSeconds(12)).toEqual({ seconds: 12n, nanos: 0 });
  });

  it('validates range and sign agreement', () => {
    expect(isValidDuration({ seconds: 1n, nanos: -1 })).toBe(false);
    expect(isValidDuration({ seconds: 0n, nanos: 1_000_000_000 })).toBe(false);
    expect(isValidDuration({ seconds: 315_576_000_001n, nanos: 0 })).toBe(false);
  });
});

describe('retry delays past protobuf range', () => {
  it.each([
    ['999999999999s', MAX_DURATION],
    ['315576000001s', MAX_DURATION],
    ['99999999999999999999999999s', MAX_DURATION],
    ['999999999999.5s', MAX_DURATION],
    ['99999999999s', { seconds: 99_999_999_999n, nanos: 0 }],
    ['0000000000012s', { seconds: 12n, nanos: 0 }],
    ['12s', { seconds: 12n, nanos: 0 }],
  ])('parseJsonRetryDelay(%j)', (text, expected) => {
    expect(parseJsonRetryDelay(text)).toEqual(expected);
  });

  it.each(['-999999999999s', '999999999999', '1e400s', '999999999999.0000000001s', '.5s', ''])(
    'parseJsonRetryDelay rejects %j',
    (text) => {
      expect(parseJsonRetryDelay(text)).toBeUndefined();
    },
  );

  it('reads any positive seconds past the range as MAX_DURATION, anything in range as it is (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
        fc.integer({ min: 0, max: 999_999_999 }),
        (seconds, nanos) => {
          const text = `${seconds}${nanos === 0 ? '' : `.${String(nanos).padStart(9, '0')}`}s`;
          const expected = seconds > 315_576_000_000n ? MAX_DURATION : { seconds, nanos };
          expect(parseJsonRetryDelay(text)).toEqual(expected);
          expect(retryDelayOf({ seconds, nanos })).toEqual(expected);
        },
      ),
    );
  });

  it('retryDelayOf drops negative delays past the range and mixed signs; keeps valid ones', () => {
    expect(retryDelayOf({ seconds: -(2n ** 63n), nanos: 0 })).toBeUndefined();
    expect(retryDelayOf({ seconds: -1n, nanos: 0 })).toEqual({ seconds: -1n, nanos: 0 });
    expect(retryDelayOf({ seconds: 2n ** 63n - 1n, nanos: -1 })).toBeUndefined();
    expect(retryDelayOf({ seconds: 2n ** 63n - 1n, nanos: 1_000_000_000 })).toBeUndefined();
    expect(durationToMs(MAX_DURATION)).toBe(315_576_000_000_000);
  });
});
