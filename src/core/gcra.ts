/**
 * @module gcra
 * GCRA arithmetic (a token bucket kept as one timestamp, `tatUs`) in integer microseconds.
 */

/**
 * The GCRA parameters of one rate policy, µs.
 */
export interface GcraParams {
  /** T = window / limit, µs. */
  readonly emissionUs: number;
  /** τ = (burst − 1)·T, µs. */
  readonly toleranceUs: number;
  /** Bucket size. */
  readonly burst: number;
}

/**
 * Time until a request at `nowUs` conforms, µs (0 when it conforms now).
 *
 * @example
 * ```ts
 * conformDelayUs(undefined, 5, p); // 0: no state is a full bucket
 * conformDelayUs(20_000_000, 0, p); // 11_000_000
 * ```
 */
export function conformDelayUs(tatUs: number | undefined, nowUs: number, p: GcraParams): number {
  if (tatUs === undefined) return 0;
  const delay = tatUs - p.toleranceUs - nowUs;
  return Math.max(delay, 0);
}

/**
 * The state after charging one request at `nowUs`: `max(tat, now) + T`.
 *
 * @example
 * ```ts
 * chargeTatUs(undefined, 100, p); // 1_000_100
 * ```
 */
export function chargeTatUs(tatUs: number | undefined, nowUs: number, p: GcraParams): number {
  return (tatUs === undefined || tatUs < nowUs ? nowUs : tatUs) + p.emissionUs;
}

/**
 * The state after refunding one emission interval: `max(tat − T, now)`; a full bucket stays full.
 *
 * @example
 * ```ts
 * refundTatUs(5_000_000, 0, p); // 4_000_000
 * ```
 */
export function refundTatUs(tatUs: number, nowUs: number, p: GcraParams): number {
  const refunded = tatUs - p.emissionUs;
  return Math.max(refunded, nowUs);
}

/**
 * Whether a key's state is the same as no state (full bucket): it can be dropped.
 *
 * @example
 * ```ts
 * isFullBucket(10, 11); // true
 * ```
 */
export function isFullBucket(tatUs: number | undefined, nowUs: number): boolean {
  return tatUs === undefined || tatUs <= nowUs;
}

/**
 * Whole requests available now (`r` of `RateLimit`), in the number form the hot path uses:
 * `min(burst, floor((now + τ + T − tat) / T))`, `burst` for a full bucket.
 *
 * @example
 * ```ts
 * remainingNow(20_000_000, 0, 1_000_000, 9_000_000, 10); // 0
 * ```
 */
export function remainingNow(
  tatUs: number | undefined,
  nowUs: number,
  emissionUs: number,
  toleranceUs: number,
  burst: number,
): number {
  if (tatUs === undefined || tatUs <= nowUs) return burst;
  const slack = nowUs + toleranceUs + emissionUs - tatUs;
  return slack > 0 ? Math.min(burst, Math.floor(slack / emissionUs)) : 0;
}

/**
 * µs until the requests available now ({@link remainingNow}, `remaining`) next grow; 0 when the
 * bucket is full.
 */
export function nextGrowthUs(
  tatUs: number | undefined,
  nowUs: number,
  emissionUs: number,
  toleranceUs: number,
  burst: number,
  remaining: number,
): number {
  if (tatUs === undefined || remaining >= burst) return 0;
  return tatUs - toleranceUs + remaining * emissionUs - nowUs;
}

/**
 * Whole requests available now (`r`) and µs until that number next grows (0 when full).
 *
 * @example
 * ```ts
 * availableNow(undefined, 0, p); // { remaining: 10, nextUs: 0 }
 * availableNow(20_000_000, 0, p); // { remaining: 0, nextUs: 11_000_000 }
 * ```
 */
export function availableNow(
  tatUs: number | undefined,
  nowUs: number,
  p: GcraParams,
): { remaining: number; nextUs: number } {
  const { emissionUs, toleranceUs, burst } = p;
  const remaining = remainingNow(tatUs, nowUs, emissionUs, toleranceUs, burst);
  return {
    remaining,
    nextUs: nextGrowthUs(tatUs, nowUs, emissionUs, toleranceUs, burst, remaining),
  };
}

/**
 * How far ahead of now a policy ever puts a key's timestamp, and where one found further ahead
 * is put back (both µs; `CompiledRatePolicy` fits).
 */
export interface StepBackBounds {
  readonly maxAheadUs: number;
  readonly steppedBackAheadUs: number;
}

/**
 * Whether `tatUs` lies further ahead of `nowUs` than the policy itself ever puts it: the state
 * was written before the clock stepped back (or another host's clock was ahead). Such a key is
 * read as {@link StepBackBounds.steppedBackAheadUs} ahead of now, so no delay is longer than the
 * policy can ask, whatever the clock did; every store applies this same rule.
 *
 * @example
 * ```ts
 * isSteppedBack(now + 3_660_000_000, now, { maxAheadUs: 120_000_000, steppedBackAheadUs: 60_000_000 }); // true
 * ```
 */
export function isSteppedBack(
  tatUs: number | undefined,
  nowUs: number,
  b: StepBackBounds,
): tatUs is number {
  return tatUs !== undefined && tatUs - nowUs > b.maxAheadUs;
}
