import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  availableNow,
  chargeTatUs,
  conformDelayUs,
  type GcraParams,
  nextGrowthUs,
  refundTatUs,
  remainingNow,
} from './gcra.js';

/** 60 per minute, burst 10. */
const p: GcraParams = { emissionUs: 1_000_000, toleranceUs: 9_000_000, burst: 10 };

describe('gcra', () => {
  it('conformDelayUs, chargeTatUs, refundTatUs: the worked numbers', () => {
    expect(conformDelayUs(undefined, 5, p)).toBe(0);
    expect(conformDelayUs(20_000_000, 0, p)).toBe(11_000_000);
    expect(chargeTatUs(undefined, 100, p)).toBe(1_000_100);
    expect(refundTatUs(5_000_000, 0, p)).toBe(4_000_000);
    expect(refundTatUs(500_000, 0, p)).toBe(0);
  });

  it('availableNow: full bucket, an empty one, one partly spent', () => {
    expect(availableNow(undefined, 0, p)).toEqual({ remaining: 10, nextUs: 0 });
    expect(availableNow(20_000_000, 0, p)).toEqual({ remaining: 0, nextUs: 11_000_000 });
    // Three charged at 0: seven left, the next one back 1 s later.
    expect(availableNow(3_000_000, 0, p)).toEqual({ remaining: 7, nextUs: 1_000_000 });
  });

  it('remainingNow / nextGrowthUs agree with a bucket charged request by request', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5_000_000 }),
        fc.integer({ min: 1, max: 50 }),
        fc.array(fc.integer({ min: 0, max: 3_000_000 }), { maxLength: 60 }),
        (emissionUs, burst, gaps) => {
          const q = { emissionUs, toleranceUs: (burst - 1) * emissionUs, burst };
          let nowUs = 0;
          let tatUs: number | undefined;
          let tokens = burst;
          let lastUs = 0;
          for (const gap of gaps) {
            nowUs += gap;
            const remaining = remainingNow(tatUs, nowUs, q.emissionUs, q.toleranceUs, q.burst);
            const nextUs = nextGrowthUs(
              tatUs,
              nowUs,
              q.emissionUs,
              q.toleranceUs,
              q.burst,
              remaining,
            );
            expect({ remaining, nextUs }).toEqual(availableNow(tatUs, nowUs, q));
            expect(remaining).toBeGreaterThanOrEqual(0);
            expect(remaining).toBeLessThanOrEqual(burst);
            // A request conforms exactly when at least one is available.
            expect(conformDelayUs(tatUs, nowUs, q) === 0).toBe(remaining >= 1);
            if (remaining < burst) {
              expect(nextUs).toBeGreaterThan(0);
              expect(
                remainingNow(tatUs, nowUs + nextUs, q.emissionUs, q.toleranceUs, q.burst),
              ).toBe(remaining + 1);
              expect(
                remainingNow(tatUs, nowUs + nextUs - 1, q.emissionUs, q.toleranceUs, q.burst),
              ).toBe(remaining);
            } else {
              expect(nextUs).toBe(0);
            }
            // Token-bucket reference: one token per emission interval, at most burst.
            tokens = Math.min(burst, tokens + (nowUs - lastUs) / emissionUs);
            lastUs = nowUs;
            expect(remaining).toBe(Math.floor(tokens + 1e-9));
            if (remaining >= 1) {
              tatUs = chargeTatUs(tatUs, nowUs, q);
              tokens -= 1;
            }
          }
        },
      ),
    );
  });
});
