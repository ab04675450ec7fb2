/**
 * The gate in virtual time against the real decision code: calls not yet sent wait for a learned
 * delay and are released at the policy's pace; gates are per method group and per caller.
 */

import type { RatePolicy } from 'a2a-ratelimit';
import { MemoryStore } from 'a2a-ratelimit';
import { RetryScheduler } from 'a2a-ratelimit/client';
import { createVirtualTime, seededRandom } from 'a2a-ratelimit/simulation';
import { describe, expect, it } from 'vitest';
import { SimulatedAgent } from './simulated-agent.js';

/** 5 per minute, burst 1: one call every 12 s. */
const slowPolicy: RatePolicy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage'],
  limit: 5,
  windowSeconds: 60,
  burst: 1,
};

function setup() {
  const vt = createVirtualTime();
  const store = new MemoryStore({ policies: [slowPolicy], clock: vt });
  const agent = new SimulatedAgent({ store, clock: vt });
  const scheduler = new RetryScheduler({
    clock: vt,
    sleep: vt.sleep,
    random: seededRandom(1),
    maxSingleWaitMs: Number.POSITIVE_INFINITY,
    budgetMs: Number.POSITIVE_INFINITY,
  });
  const send = (caller: string, method: 'SendMessage' | 'GetTask', messageId?: string) =>
    scheduler.run(
      { agent: 'agent', caller, method },
      agent.attempt({ caller, method, ...(messageId === undefined ? {} : { messageId }) }),
    );
  return { vt, agent, scheduler, send };
}

describe('gate', () => {
  it('100 calls after a learned 12 s delay: none sent before 12 s, then paced with no rejection', async () => {
    const { vt, agent, send } = setup();
    const first = [send('a', 'SendMessage', 'm-0'), send('a', 'SendMessage', 'm-1')];
    await vt.advance(0);
    expect(agent.requests.map((r) => r.admitted)).toEqual([true, false]); // m-1 learned "12 s"

    const fanOut = Array.from({ length: 100 }, (_, i) => send('a', 'SendMessage', `f-${i}`));
    await vt.runUntilIdle();
    const results = await Promise.all([...first, ...fanOut]);

    expect(results.every((r) => r.admitted)).toBe(true);
    const fan = agent.requests.filter((r) => r.messageId?.startsWith('f-'));
    expect(fan).toHaveLength(100); // each sent once: no further rejections
    expect(fan.every((r) => r.admitted)).toBe(true);
    expect(Math.min(...fan.map((r) => r.atMs))).toBeGreaterThanOrEqual(12_000);
    expect(agent.requests.filter((r) => !r.admitted)).toHaveLength(1);
    const times = agent.requests
      .filter((r) => r.admitted)
      .map((r) => r.atMs)
      .sort((x, y) => x - y);
    for (let i = 0; i + 1 < times.length; i++) {
      // Admitted sends k apart are at least (k − 1)·12 s apart (GCRA, burst 1, jitter < 1 s).
      expect(times[i + 1] as number).toBeGreaterThanOrEqual((times[i] as number) + 12_000 - 1_000);
    }
  });

  it('a quota hit on SendMessage does not delay GetTask; caller A does not delay caller B', async () => {
    const { vt, agent, send } = setup();
    const pending = [send('a', 'SendMessage', 'a-0'), send('a', 'SendMessage', 'a-1')];
    await vt.advance(0);
    expect(agent.requests.at(-1)?.admitted).toBe(false);

    const getTask = send('a', 'GetTask');
    const otherCaller = send('b', 'SendMessage', 'b-0');
    const laterA = send('a', 'SendMessage', 'a-2');
    await vt.advance(0);
    const at = (pred: (r: (typeof agent.requests)[number]) => boolean) =>
      agent.requests.filter(pred).map((r) => r.atMs);
    expect(at((r) => r.method === 'GetTask')).toEqual([0]);
    expect(at((r) => r.caller === 'b')).toEqual([0]);
    expect(at((r) => r.messageId === 'a-2')).toEqual([]); // A's next SendMessage waits in A's gate

    await vt.runUntilIdle();
    await Promise.all([...pending, getTask, otherCaller, laterA]);
    expect(at((r) => r.messageId === 'a-2')[0]).toBeGreaterThanOrEqual(24_000);
  });

  it('without RateLimit-Policy, releases one at a time as responses come back', async () => {
    const vt = createVirtualTime();
    const scheduler = new RetryScheduler({ clock: vt, sleep: vt.sleep, random: () => 0 });
    const sentAt: number[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    let rejectOnce = true;
    const attempt = async () => {
      sentAt.push(vt.nowMs());
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await vt.sleep(100); // round trip
      inFlight--;
      if (rejectOnce) {
        rejectOnce = false;
        return {
          ok: false as const,
          hint: { kind: 'quota' as const, delayMs: 5_000 },
          failure: { value: 'x' },
        };
      }
      return { ok: true as const, value: 'ok' };
    };
    const call = () => scheduler.run({ agent: 'x', caller: 'c', method: 'SendMessage' }, attempt);
    const firstCall = call();
    await vt.advance(100); // the rejection is back: wall at 5.1 s
    const queued = Array.from({ length: 5 }, call);
    await vt.runUntilIdle();
    await Promise.all([firstCall, ...queued]);
    expect(sentAt.slice(1).every((t) => t >= 5_100)).toBe(true);
    expect(maxInFlight).toBe(1);
  });

  it('fails at once when the gate cannot release a call within its budget', async () => {
    const vt = createVirtualTime();
    const scheduler = new RetryScheduler({ clock: vt, sleep: vt.sleep, budgetMs: 10_000 });
    let calls = 0;
    const hint = { kind: 'quota' as const, delayMs: 30_000, policy: 'p' };
    const attempt = async () => {
      calls++;
      return { ok: false as const, hint, failure: { value: 'x' } };
    };
    const first = scheduler.run({ agent: 'x', caller: 'c', method: 'SendMessage' }, attempt);
    await expect(first).rejects.toMatchObject({ isRetryBudgetExceededError: true, hint });
    const second = scheduler.run({ agent: 'x', caller: 'c', method: 'SendMessage' }, attempt);
    await expect(second).rejects.toMatchObject({ isRetryBudgetExceededError: true, attempts: 0 });
    expect(calls).toBe(1);
    expect(vt.nowMs()).toBe(0);
  });

  it('paces on success: RateLimit r=0;t=5 makes the next send wait 5 s, r>0 does not', async () => {
    const vt = createVirtualTime();
    const scheduler = new RetryScheduler({ clock: vt, sleep: vt.sleep });
    const sentAt: number[] = [];
    const answer = (remaining: number) => async () => {
      sentAt.push(vt.nowMs());
      return {
        ok: true as const,
        value: 'ok',
        rateLimit: {
          policies: [{ policy: 'p', limit: 60, windowSeconds: 60 }],
          states: [{ policy: 'p', remaining, resetSeconds: 5 }],
        },
      };
    };
    const call = { agent: 'x', caller: 'c', method: 'GetTask' };
    await scheduler.run(call, answer(3));
    await scheduler.run(call, answer(0));
    const paced = scheduler.run(call, answer(0));
    await vt.runUntilIdle();
    await paced;
    expect(sentAt).toEqual([0, 0, 5_000]);
  });

  it('keeps at most maxGates gates, dropping idle ones', async () => {
    const vt = createVirtualTime();
    const scheduler = new RetryScheduler({ clock: vt, sleep: vt.sleep, maxGates: 10 });
    for (let i = 0; i < 50; i++) {
      await scheduler.run({ agent: `agent-${i}`, caller: 'c', method: 'GetTask' }, async () => ({
        ok: true,
        value: i,
      }));
    }
    expect(scheduler.pacers.size).toBeLessThanOrEqual(10);
  });
});
