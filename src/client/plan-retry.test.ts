import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RetryHint } from '../wire/retry-hint.js';
import {
  backoffDelayMs,
  DEFAULT_RETRY_RULES,
  isIdempotentMethod,
  mayRetry,
  planRetry,
  type RetryRules,
} from './plan-retry.js';

const base = {
  retriesSoFar: 0,
  nowMs: 1_000,
  deadlineMs: Number.POSITIVE_INFINITY,
  random: () => 0.5,
};

describe('planRetry', () => {
  it('waits the hint plus jitter on top', () => {
    const plan = planRetry({
      ...base,
      hint: { kind: 'quota', delayMs: 12_000 },
      method: 'SendMessage',
    });
    expect(plan).toEqual({ action: 'retry', delayMs: 12_500, hintedDelayMs: 12_000 });
  });

  it('stops at once when the hint exceeds maxSingleWaitMs or the deadline (never clamps)', () => {
    const hint: RetryHint = { kind: 'quota', delayMs: 90_000 };
    expect(planRetry({ ...base, hint, method: 'SendMessage' })).toEqual({
      action: 'stop',
      reason: 'budget',
      requiredWaitMs: 90_000,
    });
    const fits = { kind: 'quota', delayMs: 20_000 } as const;
    expect(
      planRetry({ ...base, hint: fits, method: 'SendMessage', deadlineMs: 1_000 + 19_999 }),
    ).toMatchObject({ action: 'stop', reason: 'budget' });
  });

  it('trims jitter to the deadline but never goes below the hint', () => {
    const plan = planRetry({
      ...base,
      hint: { kind: 'quota', delayMs: 10_000 },
      method: 'SendMessage',
      deadlineMs: 1_000 + 10_200,
      random: () => 0.99,
    });
    expect(plan).toEqual({ action: 'retry', delayMs: 10_200, hintedDelayMs: 10_000 });
  });

  it('backs off with full jitter only without a hint', () => {
    const plan = planRetry({
      ...base,
      retriesSoFar: 3,
      hint: { kind: 'overload' },
      method: 'GetTask',
    });
    expect(plan).toEqual({ action: 'retry', delayMs: 0.5 * 500 * 8 });
  });

  it('retries quota and overload for any method, transient only when safe', () => {
    const dedup: RetryRules = { ...DEFAULT_RETRY_RULES, agentDeduplicates: true };
    const transient: RetryHint = { kind: 'transient-unknown' };
    expect(planRetry({ ...base, hint: transient, method: 'SendMessage' })).toEqual({
      action: 'stop',
      reason: 'unsafe',
    });
    expect(planRetry({ ...base, hint: transient, method: 'message/stream' })).toMatchObject({
      action: 'stop',
    });
    expect(planRetry({ ...base, hint: transient, method: 'SendMessage' }, dedup).action).toBe(
      'retry',
    );
    expect(planRetry({ ...base, hint: transient, method: 'GetTask' }).action).toBe('retry');
    expect(planRetry({ ...base, hint: transient, method: 'CancelTask' }).action).toBe('retry');
    expect(
      planRetry({ ...base, hint: transient, method: 'CreateTaskPushNotificationConfig' }),
    ).toMatchObject({
      reason: 'unsafe',
    });
    expect(
      planRetry({ ...base, hint: { kind: 'quota' }, method: 'CreateTaskPushNotificationConfig' })
        .action,
    ).toBe('retry');
  });

  it('stops on not-retryable, doNotRetry and exhausted retries', () => {
    expect(
      planRetry({ ...base, hint: { kind: 'not-retryable' }, method: 'GetTask' }),
    ).toMatchObject({
      reason: 'not-retryable',
    });
    expect(
      planRetry({ ...base, hint: { kind: 'quota', doNotRetry: true }, method: 'GetTask' }),
    ).toMatchObject({
      reason: 'do-not-retry',
    });
    expect(
      planRetry({
        ...base,
        retriesSoFar: 5,
        hint: { kind: 'transient-unknown' },
        method: 'GetTask',
      }),
    ).toMatchObject({ reason: 'retries-exhausted' });
  });

  it('counts refusals with a delay apart: while hints keep coming the deadline decides', () => {
    const hinted = { kind: 'quota', delayMs: 1_000 } as const;
    // 500 hinted re-sends: still a retry (no count by default).
    expect(
      planRetry({
        ...base,
        retriesSoFar: 500,
        hintedRetriesSoFar: 500,
        hint: hinted,
        method: 'SendMessage',
      }),
    ).toMatchObject({ action: 'retry', hintedDelayMs: 1_000 });
    // ... until the deadline does not fit the hint.
    expect(
      planRetry({
        ...base,
        retriesSoFar: 500,
        hintedRetriesSoFar: 500,
        deadlineMs: base.nowMs + 999,
        hint: hinted,
        method: 'SendMessage',
      }),
    ).toMatchObject({ action: 'stop', reason: 'budget' });
    // A hint-less failure after them is counted only against the hint-less re-sends.
    const noHint = {
      ...base,
      retriesSoFar: 504,
      hintedRetriesSoFar: 500,
      hint: { kind: 'overload' } as const,
      method: 'SendMessage',
    };
    expect(planRetry(noHint)).toMatchObject({ action: 'retry' });
    expect(planRetry({ ...noHint, retriesSoFar: 505 })).toMatchObject({
      reason: 'retries-exhausted',
    });
    // An explicit cap still applies.
    const rules: RetryRules = { ...DEFAULT_RETRY_RULES, maxHintedRetries: 3 };
    const capped = { ...base, hint: hinted, method: 'SendMessage' };
    expect(planRetry({ ...capped, retriesSoFar: 2, hintedRetriesSoFar: 2 }, rules).action).toBe(
      'retry',
    );
    expect(planRetry({ ...capped, retriesSoFar: 3, hintedRetriesSoFar: 3 }, rules)).toMatchObject({
      reason: 'retries-exhausted',
    });
    // "Come back now" (a zero delay) is counted: Retry-After: 0 forever stops after maxRetries.
    expect(
      planRetry({
        ...base,
        retriesSoFar: 5,
        hint: { kind: 'quota', delayMs: 0 },
        method: 'SendMessage',
      }),
    ).toMatchObject({ action: 'stop', reason: 'retries-exhausted' });
    // A transient failure with a delay is not a refusal: it counts against maxRetries.
    expect(
      planRetry({
        ...base,
        retriesSoFar: 5,
        hint: { kind: 'transient-unknown', delayMs: 1_000 },
        method: 'GetTask',
      }),
    ).toMatchObject({ reason: 'retries-exhausted' });
  });

  it('property: a retry never waits less than the hint, and stops only when the hint does not fit', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer({ min: 1, max: 200_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.constantFrom('quota', 'overload') as fc.Arbitrary<'quota' | 'overload'>,
        (delayMs, remainingMs, maxSingleWaitMs, u, kind) => {
          const plan = planRetry(
            {
              ...base,
              nowMs: 0,
              deadlineMs: remainingMs,
              random: () => u,
              hint: { kind, delayMs },
              method: 'SendMessage',
            },
            { ...DEFAULT_RETRY_RULES, maxSingleWaitMs },
          );
          const fits = delayMs <= remainingMs && delayMs <= maxSingleWaitMs;
          if (!fits)
            return (
              plan.action === 'stop' && plan.reason === 'budget' && plan.requiredWaitMs === delayMs
            );
          return (
            plan.action === 'retry' &&
            plan.delayMs >= delayMs &&
            plan.delayMs <= delayMs + DEFAULT_RETRY_RULES.jitterMs &&
            plan.delayMs <= remainingMs
          );
        },
      ),
    );
  });
});

describe('helpers', () => {
  it('backoffDelayMs stays in [0, min(cap, base·2^n))', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 40 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (n, u) => {
          const d = backoffDelayMs(n, () => u);
          return d >= 0 && d < Math.max(1e-9, Math.min(60_000, 500 * 2 ** n)) + 1e-9;
        },
      ),
    );
  });

  it('idempotent methods are Get*, List*, Cancel*', () => {
    expect(['GetTask', 'ListTasks', 'CancelTask', 'tasks/get'].map(isIdempotentMethod)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['SendMessage', 'DeleteTaskPushNotificationConfig'].map(isIdempotentMethod)).toEqual([
      false,
      false,
    ]);
    expect(mayRetry({ kind: 'not-retryable' }, 'GetTask', true)).toBe(false);
  });

  it('repeatable: a transient failure is retried whatever the method; nothing else changes', () => {
    const transient: RetryHint = { kind: 'transient-unknown', status: 502 };
    const input = { ...base, hint: transient, method: 'PushNotification' };
    expect(planRetry(input)).toEqual({ action: 'stop', reason: 'unsafe' });
    expect(planRetry({ ...input, repeatable: true })).toEqual({ action: 'retry', delayMs: 250 });
    const refused: RetryHint = { kind: 'not-retryable', status: 404 };
    expect(planRetry({ ...input, hint: refused, repeatable: true })).toEqual({
      action: 'stop',
      reason: 'not-retryable',
    });
  });
});
