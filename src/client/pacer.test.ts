import { describe, expect, it } from 'vitest';
import { createVirtualTime } from '../simulation/virtual-time.js';
import type { CardRateLimits } from '../wire/rate-limit-card.js';
import type { RetryHint } from '../wire/retry-hint.js';
import { PacerTable } from './pacer-table.js';

const limits = { deadlineMs: Number.POSITIVE_INFINITY, maxWaitMs: 60_000 };

function card(...policies: CardRateLimits['policies']): CardRateLimits {
  return { policies, deduplicatesMessageIds: true };
}

function ratePolicy(name: string) {
  return {
    kind: 'rate',
    name,
    scope: 'caller',
    methods: ['SendMessage'],
    limit: 60,
    windowSeconds: 60,
    burst: 1,
    tiers: [],
  } as const;
}

describe("PacedCall: a call's card buckets", () => {
  it('a re-send claiming a held slot is not charged by that policy, but by the others', async () => {
    const table = new PacerTable({ clock: { nowMs: () => 0 } });
    table.learn('agent', card(ratePolicy('a'), ratePolicy('b')));
    const call = await table.start('agent', 'c', 'SendMessage', limits);
    const [a, b] = call.rates;
    expect(call.covers('a')).toBe(true);
    expect(call.covers('c')).toBe(false);
    expect(call.releaseAtMs(0)).toBeCloseTo(1_000, 2); // the first send was charged by both
    expect(call.contended(0)).toBeUndefined();
    const hint: RetryHint = {
      kind: 'quota',
      delayMs: 5_000,
      delaySource: 'ratelimit',
      policy: 'a',
      reserved: true,
    };
    call.refused(hint);
    expect(call.contended(0)).toBe(a);
    call.retryScheduled();
    call.resend(hint);
    // a: the slot held at 5 s, then one interval; b: charged by the re-send too.
    expect(a?.conformAtMs(0)).toBeCloseTo(6_000, 2);
    expect(b?.conformAtMs(0)).toBeCloseTo(2_000, 2);
    expect(call.releaseAtMs(0)).toBeCloseTo(6_000, 2);
  });

  it('a full concurrency bucket holds the next call until an answer (or a stream end) frees room', async () => {
    const vt = createVirtualTime();
    const table = new PacerTable({ clock: vt, sleep: vt.sleep });
    const tasks = {
      kind: 'concurrency',
      name: 'tasks',
      scope: 'caller',
      methods: ['SendMessage'],
      max: 1,
    } as const;
    table.learn('agent', card(tasks));
    const first = await table.start('agent', 'c', 'SendMessage', limits);
    expect(first.releaseAtMs(0)).toBeUndefined();
    let second = false;
    const next = table.start('agent', 'c', 'SendMessage', limits).then((call) => {
      second = true;
      return call;
    });
    await vt.advance(1);
    expect(second).toBe(false);
    let endStream = (): void => {};
    first.answered(undefined, new Promise<void>((resolve) => (endStream = resolve)));
    await vt.advance(1);
    expect(second).toBe(false);
    endStream();
    await vt.advance(1);
    expect(second).toBe(true);
    (await next).answered(undefined);
    expect(table.planFor('agent', 'c', 'SendMessage')?.concurrency[0]?.isIdle()).toBe(true);
  });
});
