/**
 * @module answer-budget
 * The bound on the Message answers one limiter keeps for deduplicated copies: per answer, per
 * caller and in all, over the dedup TTL.
 */

/**
 * What each kept answer counts for besides its own bytes (the record, its key, the bookkeeping),
 * so even empty answers are bounded in number: at most `maxBytesPerCaller / 256` per caller.
 */
export const ANSWER_OVERHEAD_BYTES = 256;

/**
 * The bounds on the Message answers kept for copies (`dedup.answers`), in bytes (UTF-8 of the
 * stored answer).
 *
 * @example
 * ```ts
 * const limits: AnswerLimits = { maxBytes: 16_384, maxBytesPerCaller: 1_048_576, maxBytesTotal: 67_108_864 };
 * ```
 */
export interface AnswerLimits {
  /** One answer at most; a larger one is not kept. */
  readonly maxBytes: number;
  /** Kept answers of one caller at most, overhead included. */
  readonly maxBytesPerCaller: number;
  /** Kept answers of every caller at most, overhead included. */
  readonly maxBytesTotal: number;
}

/** Entries consumed from the head of the queue before it is compacted. */
const COMPACT_AFTER = 1024;

/**
 * The byte budget of kept answers, per caller and in total, over a sliding TTL. An answer counts
 * until its record's TTL ends even when the record is dropped earlier (the bound errs on the safe
 * side).
 *
 * @example
 * ```ts
 * const budget = new AnswerBudget(limits, 900_000);
 * if (budget.take('alice', 212, clock.nowMs())) keep(answer);
 * ```
 */
export class AnswerBudget {
  /** Bytes kept per caller (callers with none are not listed). */
  private readonly perCaller = new Map<string, number>();
  /** Kept answers in keeping order: caller, bytes counted, expiry (ms). */
  private callers: string[] = [];
  private sizes: number[] = [];
  private expiresMs: number[] = [];
  private head = 0;
  private total = 0;

  constructor(
    private readonly limits: AnswerLimits,
    private readonly ttlMs: number,
  ) {}

  /** Bytes counted now (overhead included). */
  get bytesHeld(): number {
    return this.total;
  }

  /** Answers counted now. */
  get answersHeld(): number {
    return this.callers.length - this.head;
  }

  /**
   * Whether `caller` may keep an answer of `bytes` now; when it may, the answer is counted until
   * `nowMs + ttlMs`.
   *
   * @example
   * ```ts
   * budget.take('alice', 212, clock.nowMs()); // true until alice's bytes reach the bound
   * ```
   */
  take(caller: string, bytes: number, nowMs: number): boolean {
    if (bytes > this.limits.maxBytes) return false;
    this.expire(nowMs);
    const cost = bytes + ANSWER_OVERHEAD_BYTES + caller.length;
    const held = this.perCaller.get(caller) ?? 0;
    if (held + cost > this.limits.maxBytesPerCaller) return false;
    if (this.total + cost > this.limits.maxBytesTotal) return false;
    this.perCaller.set(caller, held + cost);
    this.total += cost;
    this.callers.push(caller);
    this.sizes.push(cost);
    this.expiresMs.push(nowMs + this.ttlMs);
    return true;
  }

  /** Stops counting answers whose records' TTL has ended. */
  private expire(nowMs: number): void {
    while (this.head < this.callers.length && (this.expiresMs[this.head] as number) <= nowMs) {
      const caller = this.callers[this.head] as string;
      const cost = this.sizes[this.head] as number;
      const left = (this.perCaller.get(caller) ?? 0) - cost;
      if (left > 0) this.perCaller.set(caller, left);
      else this.perCaller.delete(caller);
      this.total -= cost;
      this.head++;
    }
    if (this.head >= COMPACT_AFTER && this.head * 2 >= this.callers.length) {
      this.callers = this.callers.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.expiresMs = this.expiresMs.slice(this.head);
      this.head = 0;
    }
  }
}
