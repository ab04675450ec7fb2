import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createVirtualTime } from '../simulation/virtual-time.js';
import type { RetryHint } from '../wire/retry-hint.js';
import {
  isAgentOverloadedError,
  isRateLimitedError,
  isRetryBudgetExceededError,
} from './retry-errors.js';
import {
  type AttemptOutcome,
  RetryScheduler,
  type RetrySchedulerOptions,
} from './retry-scheduler.js';

/** A scripted transport: answers each attempt from `script`, records send times. */
function scripted(vt: { nowMs(): number }, script: (RetryHint | 'ok')[]) {
  const sentAtMs: number[] = [];
  const attempt = async (i: number): Promise<AttemptOutcome<string>> => {
    sentAtMs.push(vt.nowMs());
    const step = script[Math.min(i, script.length - 1)] ?? 'ok';
    if (step === 'ok') return { ok: true, value: 'done' };
    return { ok: false, hint: step, failure: { value: `failed-${i}` } };
  };
  return { sentAtMs, attempt };
}

function makeScheduler(options: RetrySchedulerOptions = {}) {
  const vt = createVirtualTime();
  const scheduler = new RetryScheduler({
    clock: vt,
    sleep: vt.sleep,
    random: () => 0.3,
    ...options,
  });
  return { vt, scheduler };
}

const call = { agent: 'a', caller: 'c', method: 'SendMessage' };

describe('RetryScheduler', () => {
  it('re-sends after the hinted delay plus jitter, and returns the success', async () => {
    const { vt, scheduler } = makeScheduler();
    const { sentAtMs, attempt } = scripted(vt, [{ kind: 'quota', delayMs: 12_000 }, 'ok']);
    const result = scheduler.run(call, attempt);
    await vt.runUntilIdle();
    await expect(result).resolves.toBe('done');
    expect(sentAtMs).toEqual([0, 12_300]);
  });

  it('fails now with RetryBudgetExceededError when the hint exceeds maxSingleWaitMs', async () => {
    const { vt, scheduler } = makeScheduler({ maxSingleWaitMs: 10_000 });
    const hint: RetryHint = { kind: 'quota', delayMs: 10_001, policy: 'p' };
    const { sentAtMs, attempt } = scripted(vt, [hint]);
    const result = scheduler.run(call, attempt);
    await expect(result).rejects.toSatisfy(
      (e) => isRetryBudgetExceededError(e) && e.hint === hint && e.requiredWaitMs === 10_001,
    );
    expect(sentAtMs).toEqual([0]);
    expect(vt.nowMs()).toBe(0); // did not sleep out anything
  });

  it('fails now when the hint does not fit before the call deadline', async () => {
    const { vt, scheduler } = makeScheduler();
    const { attempt } = scripted(vt, [{ kind: 'overload', delayMs: 5_000 }]);
    const result = scheduler.run({ ...call, deadlineMs: 4_000 }, attempt);
    await expect(result).rejects.toSatisfy(
      (e) => isRetryBudgetExceededError(e) && e.remainingMs === 4_000,
    );
    expect(vt.nowMs()).toBe(0);
  });

  it('keeps re-sending while hints keep coming, until the deadline decides', async () => {
    const { vt, scheduler } = makeScheduler({ budgetMs: 60_000 });
    const hints: (RetryHint | 'ok')[] = Array.from({ length: 30 }, () => ({
      kind: 'quota',
      delayMs: 1_000,
    }));
    const { sentAtMs, attempt } = scripted(vt, [...hints, 'ok']);
    const result = scheduler.run(call, attempt);
    await vt.runUntilIdle();
    await expect(result).resolves.toBe('done');
    expect(sentAtMs).toHaveLength(31); // far past maxRetries (5): the hints decide

    const endless = scripted(vt, [{ kind: 'overload', delayMs: 1_000 }]);
    const startMs = vt.nowMs();
    const stopped = scheduler.run({ ...call, caller: 'endless' }, endless.attempt);
    const check = expect(stopped).rejects.toSatisfy(isRetryBudgetExceededError);
    await vt.runUntilIdle();
    await check;
    // 1.3 s apart (hint + jitter) within 60 s: the deadline stopped it, not a count.
    expect(endless.sentAtMs).toHaveLength(Math.floor((60_000 - 1_000) / 1_300) + 2);
    expect(vt.nowMs() - startMs).toBeLessThanOrEqual(60_000);
  });

  it('still stops a hint-less loop by count', async () => {
    const { vt, scheduler } = makeScheduler({ maxRetries: 3, agentDeduplicates: true });
    const { sentAtMs, attempt } = scripted(vt, [{ kind: 'transient-unknown', status: 500 }]);
    const result = scheduler.run(call, attempt);
    await vt.runUntilIdle();
    await expect(result).resolves.toBe('failed-3');
    expect(sentAtMs).toHaveLength(4);
  });

  it('throws RateLimitedError / AgentOverloadedError with the last hint when retries run out', async () => {
    const { vt, scheduler } = makeScheduler({ maxHintedRetries: 2 });
    const quota = scripted(vt, [{ kind: 'quota', delayMs: 1_000 }]);
    const q = scheduler.run(call, quota.attempt);
    const overload = scripted(vt, [{ kind: 'overload', delayMs: 1_000 }]);
    const o = scheduler.run({ ...call, caller: 'other' }, overload.attempt);
    const checks = [
      expect(q).rejects.toSatisfy(
        (e) => isRateLimitedError(e) && e.attempts === 3 && e.hint.delayMs === 1_000,
      ),
      expect(o).rejects.toSatisfy((e) => isAgentOverloadedError(e) && e.attempts === 3),
    ];
    await vt.runUntilIdle();
    await Promise.all(checks);
    expect(quota.sentAtMs).toHaveLength(3);
  });

  it('stops when the agent says do not retry', async () => {
    const { vt, scheduler } = makeScheduler();
    const { attempt } = scripted(vt, [{ kind: 'quota', doNotRetry: true }]);
    await expect(scheduler.run(call, attempt)).rejects.toSatisfy(isRateLimitedError);
  });

  it('hands back the transport’s own failure when it is not retryable or unsafe', async () => {
    const { vt, scheduler } = makeScheduler();
    const bad = scripted(vt, [{ kind: 'not-retryable', status: 400 }]);
    await expect(scheduler.run({ ...call, method: 'GetTask' }, bad.attempt)).resolves.toBe(
      'failed-0',
    );
    const unsafe = scripted(vt, [{ kind: 'transient-unknown', status: 500 }]);
    await expect(scheduler.run(call, unsafe.attempt)).resolves.toBe('failed-0');
    expect(unsafe.sentAtMs).toEqual([0]);

    const thrown = new Error('socket hang up');
    const attempt = async (): Promise<AttemptOutcome<string>> => ({
      ok: false,
      hint: { kind: 'transient-unknown' },
      failure: { error: thrown },
    });
    await expect(scheduler.run(call, attempt)).rejects.toBe(thrown);
  });

  it('retries transient failures of SendMessage only when the agent deduplicates', async () => {
    const { vt, scheduler } = makeScheduler({ agentDeduplicates: true });
    const { sentAtMs, attempt } = scripted(vt, [{ kind: 'transient-unknown' }, 'ok']);
    const result = scheduler.run(call, attempt);
    await vt.runUntilIdle();
    await expect(result).resolves.toBe('done');
    expect(sentAtMs).toEqual([0, 150]); // full jitter: 0.3 × 500 ms
  });

  it('stops waiting when the caller aborts', async () => {
    const { vt, scheduler } = makeScheduler();
    const controller = new AbortController();
    const { sentAtMs, attempt } = scripted(vt, [{ kind: 'quota', delayMs: 30_000 }, 'ok']);
    const result = scheduler.run({ ...call, signal: controller.signal }, attempt);
    await vt.advance(1_000);
    controller.abort(new Error('parent cancelled'));
    await expect(result).rejects.toThrow('parent cancelled');
    await vt.runUntilIdle();
    expect(sentAtMs).toEqual([0]);
  });

  it('property: every wait is at least the hint; a hint that does not fit fails at once', async () => {
    const hintArb = fc.record({
      kind: fc.constantFrom('quota', 'overload') as fc.Arbitrary<'quota' | 'overload'>,
      delayMs: fc.integer({ min: 0, max: 90_000 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(hintArb, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1_000, max: 200_000 }),
        fc.integer({ min: 1_000, max: 80_000 }),
        fc.integer(),
        async (hints, budgetMs, maxSingleWaitMs, seed) => {
          let state = seed >>> 0;
          const random = () => {
            state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
            return state / 2 ** 32;
          };
          const { vt, scheduler } = makeScheduler({
            budgetMs,
            maxSingleWaitMs,
            maxRetries: 10,
            random,
          });
          const { sentAtMs, attempt } = scripted(vt, [...hints, 'ok']);
          const result = scheduler.run(call, attempt).then(
            (value) => ({ value }),
            (error: unknown) => ({ error }),
          );
          await vt.runUntilIdle();
          const outcome = await result;
          for (let i = 1; i < sentAtMs.length; i++) {
            const waited = (sentAtMs[i] as number) - (sentAtMs[i - 1] as number);
            if (waited < (hints[i - 1]?.delayMs ?? 0)) return false;
          }
          if ('value' in outcome) return sentAtMs.length === hints.length + 1;
          // Stopped: the hint of the last attempt did not fit, and nothing was slept out for it.
          const last = hints[sentAtMs.length - 1];
          const leftMs = budgetMs - (sentAtMs.at(-1) as number);
          return (
            isRetryBudgetExceededError(outcome.error) &&
            last !== undefined &&
            outcome.error.hint === last &&
            (last.delayMs > maxSingleWaitMs || last.delayMs > leftMs) &&
            vt.nowMs() === sentAtMs.at(-1)
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});
