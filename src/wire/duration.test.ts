import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  durationFromSeconds,
  durationToMs,
  formatJsonDuration,
  isValidDuration,
  parseJsonDuration,
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
