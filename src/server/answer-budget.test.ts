/**
 * The bound on kept answers: one answer at most `maxBytes`; one caller's answers within the TTL at
 * most `maxBytesPerCaller` (another caller still keeps its own); all of them at most
 * `maxBytesTotal`; answers stop counting when their TTL ends, and the queue stays compact.
 */
import { describe, expect, it } from 'vitest';
import { ANSWER_OVERHEAD_BYTES, AnswerBudget } from './answer-budget.js';

const TTL_MS = 60_000;

describe('AnswerBudget', () => {
  it('refuses one answer over maxBytes, and keeps one of exactly maxBytes', () => {
    const budget = new AnswerBudget(
      { maxBytes: 1000, maxBytesPerCaller: 10_000, maxBytesTotal: 100_000 },
      TTL_MS,
    );
    expect(budget.take('a', 1001, 0)).toBe(false);
    expect(budget.take('a', 1000, 0)).toBe(true);
    expect(budget.bytesHeld).toBe(1000 + ANSWER_OVERHEAD_BYTES + 1);
  });

  it('one caller fills its own share only; its answers count until their TTL ends', () => {
    const cost = 100 + ANSWER_OVERHEAD_BYTES + 'flooder'.length;
    const budget = new AnswerBudget(
      { maxBytes: 1000, maxBytesPerCaller: cost * 10, maxBytesTotal: 1_000_000 },
      TTL_MS,
    );
    let kept = 0;
    for (let i = 0; i < 1000; i++) if (budget.take('flooder', 100, i)) kept++;
    expect(kept).toBe(10);
    expect(budget.answersHeld).toBe(10);
    // Another caller keeps its answers.
    expect(budget.take('honest', 100, 1000)).toBe(true);
    // The flooder's first answers stop counting as their TTL ends: room for exactly that many.
    expect(budget.take('flooder', 100, TTL_MS - 1)).toBe(false);
    expect(budget.take('flooder', 100, TTL_MS)).toBe(true);
    expect(budget.take('flooder', 100, TTL_MS)).toBe(false);
  });

  it('the total bounds every caller together', () => {
    const cost = 100 + ANSWER_OVERHEAD_BYTES + 2;
    const budget = new AnswerBudget(
      { maxBytes: 1000, maxBytesPerCaller: 1_000_000, maxBytesTotal: cost * 50 },
      TTL_MS,
    );
    let kept = 0;
    for (let i = 0; i < 500; i++) if (budget.take(`c${i % 9}`, 100, 0)) kept++;
    expect(kept).toBe(50);
    expect(budget.bytesHeld).toBe(cost * 50);
    // All expire at once: the budget is whole again.
    expect(budget.take('zz', 100, TTL_MS)).toBe(true);
    expect(budget.answersHeld).toBe(1);
  });

  it('stays compact under a long run of keeping and expiring', () => {
    const budget = new AnswerBudget(
      { maxBytes: 1000, maxBytesPerCaller: 1_000_000, maxBytesTotal: 1_000_000 },
      100,
    );
    for (let t = 0; t < 100_000; t++) expect(budget.take(`c${t % 7}`, 10, t)).toBe(true);
    expect(budget.answersHeld).toBe(100);
    expect((budget as unknown as { callers: string[] }).callers.length).toBeLessThan(3000);
  });
});
