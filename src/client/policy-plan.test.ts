import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicies } from '../core/compile-policies.js';
import type { CompiledRatePolicy } from '../core/compiled-policy.js';
import { chargeTatUs, conformDelayUs } from '../core/gcra.js';
import { limitStateOf } from '../core/limit-state.js';
import type { CardRatePolicy } from '../wire/rate-limit-card.js';
import { ConcurrencyPlan, RatePlan } from './policy-plan.js';

function published(limit: number, windowSeconds: number, burst: number): CardRatePolicy {
  return {
    kind: 'rate',
    name: 'p',
    scope: 'caller',
    methods: ['SendMessage'],
    limit,
    windowSeconds,
    burst,
    tiers: [],
  };
}

/** The agent's own compiled policy (the same rounding of T as the decision). */
function agentPolicy(limit: number, windowSeconds: number, burst: number): CompiledRatePolicy {
  return compilePolicies([
    { name: 'p', kind: 'rate', scope: 'caller', limit, windowSeconds, burst },
  ]).policies[0] as CompiledRatePolicy;
}

/** The agent's bucket, decided with the production GCRA at integer µs as `decide` does. */
class AgentBucket {
  tatUs: number | undefined;
  constructor(readonly policy: CompiledRatePolicy) {}
  conforms(nowMs: number): boolean {
    return conformDelayUs(this.tatUs, Math.floor(nowMs * 1000), this.policy) === 0;
  }
  charge(nowMs: number): void {
    this.tatUs = chargeTatUs(this.tatUs, Math.floor(nowMs * 1000), this.policy);
  }
  /** The `RateLimit` item an admitted answer carries. */
  state(nowMs: number) {
    const s = limitStateOf(this.policy, this.tatUs, Math.floor(nowMs * 1000));
    return {
      policies: [{ policy: 'p', limit: s.limit, windowSeconds: s.windowSeconds }],
      states: [{ policy: 'p', remaining: s.remaining, resetSeconds: s.resetSeconds }],
    };
  }
}

describe('RatePlan', () => {
  it('a burst goes at once, then one per interval: the 11th of 60/min burst 10 waits 1 s', () => {
    const plan = new RatePlan(published(60, 60, 10));
    for (let i = 0; i < 10; i++) {
      expect(plan.conformAtMs(0)).toBe(0);
      plan.sent(0);
    }
    expect(plan.conformAtMs(0)).toBeCloseTo(1_000, 2);
    expect(plan.conformAtMs(0, 4)).toBeCloseTo(5_000, 2);
    expect(plan.intervalMs).toBe(1_000);
    expect(plan.isIdle(0)).toBe(false);
  });

  it('alone with the agent, every planned send conforms, at the first instant it does (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 20 }),
        // Gaps between arrivals, in intervals: often shorter than one (the plan holds calls back).
        fc.array(fc.double({ min: 0, max: 2, noNaN: true }), { minLength: 1, maxLength: 60 }),
        fc.constantFrom(0, 1_700_000_000_123.456), // virtual time, and an epoch clock in ms
        fc.boolean(),
        (limit, windowSeconds, burst, gaps, startMs, answered) => {
          const plan = new RatePlan(published(limit, windowSeconds, burst));
          const agent = new AgentBucket(agentPolicy(limit, windowSeconds, burst));
          let arrivalMs: number = startMs;
          let lastMs: number = startMs;
          for (const gap of gaps) {
            arrivalMs += gap * plan.intervalMs;
            const readyMs = Math.max(lastMs, arrivalMs);
            const sendMs = plan.conformAtMs(readyMs);
            expect(agent.conforms(sendMs)).toBe(true);
            // Never later than it must: held back, it would not have conformed 2 µs earlier.
            if (sendMs > readyMs) expect(agent.conforms(sendMs - 0.002)).toBe(false);
            plan.sent(sendMs);
            agent.charge(sendMs);
            // The answer comes back at once (virtual time) and may correct the plan.
            plan.settled(sendMs, sendMs, answered ? agent.state(sendMs) : undefined);
            lastMs = sendMs;
          }
          expect(plan.contended).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a burst whose first request the agent decides late: the send after it waits for the decision, not for our send', () => {
    const plan = new RatePlan(published(60, 60, 10));
    const agent = new AgentBucket(agentPolicy(60, 60, 10));
    for (let i = 0; i < 10; i++) plan.sent(0);
    // A cold first connection: decided 80 ms after it left; the other nine right after it.
    const decidedMs = Array.from({ length: 10 }, (_, i) => (i === 0 ? 80 : 80 + i));
    for (const atMs of decidedMs) agent.charge(atMs);
    for (const atMs of decidedMs) plan.settled(0, atMs + 1, agent.state(atMs));
    const nextMs = plan.conformAtMs(100);
    // Sent then, a warm request reaching the agent at once conforms, and not 1 ms earlier.
    expect(agent.conforms(nextMs)).toBe(true);
    expect(nextMs).toBeLessThanOrEqual(1_081.002);
    expect(nextMs).toBeGreaterThan(1_080);
    // Then one per interval from there, exactly.
    plan.sent(nextMs);
    agent.charge(nextMs);
    plan.settled(nextMs, nextMs + 1, agent.state(nextMs));
    expect(agent.conforms(plan.conformAtMs(nextMs + 1))).toBe(true);
    expect(plan.conformAtMs(nextMs + 1)).toBeLessThan(nextMs + 1_000.01);
  });

  it('sends decided and answered at random latencies never go before the agent lets them (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(
          fc.record({
            gap: fc.double({ min: 0, max: 2, noNaN: true }),
            // Send to decision, then decision to answer, in intervals: the answer is back
            // within one interval (slower answers: see the TSDoc of RatePlan).
            toDecision: fc.double({ min: 0, max: 0.7, noNaN: true }),
            toAnswer: fc.double({ min: 0, max: 0.29, noNaN: true }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        (limit, windowSeconds, burst, calls) => {
          const plan = new RatePlan(published(limit, windowSeconds, burst));
          const agent = new AgentBucket(agentPolicy(limit, windowSeconds, burst));
          // Sends in flight: decided (by the agent) and answered (to the plan) in time order.
          const pending: { sentMs: number; decideMs: number; answerMs: number; state?: unknown }[] =
            [];
          const advanceTo = (untilMs: number): void => {
            for (;;) {
              const undecided = pending.filter((p) => p.state === undefined);
              const decide = undecided.sort((a, b) => a.decideMs - b.decideMs)[0];
              const answered = pending
                .filter((p) => p.state !== undefined)
                .sort((a, b) => a.answerMs - b.answerMs)[0];
              if (
                decide !== undefined &&
                decide.decideMs <= untilMs &&
                (answered === undefined || decide.decideMs <= answered.answerMs)
              ) {
                expect(agent.conforms(decide.decideMs)).toBe(true);
                agent.charge(decide.decideMs);
                decide.state = agent.state(decide.decideMs);
              } else if (answered !== undefined && answered.answerMs <= untilMs) {
                pending.splice(pending.indexOf(answered), 1);
                plan.settled(answered.sentMs, answered.answerMs, answered.state as never);
              } else return;
            }
          };
          let arrivalMs = 0;
          let lastMs = 0;
          for (const call of calls) {
            arrivalMs += call.gap * plan.intervalMs;
            let sendMs = Math.max(lastMs, arrivalMs);
            // Answers that come back before the planned instant may move it.
            for (;;) {
              advanceTo(sendMs);
              const atMs = plan.conformAtMs(sendMs);
              if (atMs === sendMs) break;
              sendMs = atMs;
            }
            plan.sent(sendMs);
            const decideMs = sendMs + call.toDecision * plan.intervalMs;
            const answerMs = decideMs + call.toAnswer * plan.intervalMs;
            pending.push({ sentMs: sendMs, decideMs, answerMs });
            lastMs = sendMs;
          }
          advanceTo(Number.POSITIVE_INFINITY);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a card more restrictive than the agent: the answers correct it and nothing is rejected (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.double({ min: 0, max: 3, noNaN: true }), { minLength: 1, maxLength: 60 }),
        (limit, windowSeconds, burst, slower, gaps) => {
          // The card says slower and a smaller burst than the agent decides with.
          const card = published(limit, windowSeconds * slower, Math.max(1, burst - slower));
          const plan = new RatePlan(card);
          const agent = new AgentBucket(agentPolicy(limit, windowSeconds, burst));
          let arrivalMs = 0;
          let lastMs = 0;
          for (const gap of gaps) {
            arrivalMs += gap * 1000 * (windowSeconds / limit);
            const sendMs = plan.conformAtMs(Math.max(lastMs, arrivalMs));
            expect(agent.conforms(sendMs)).toBe(true);
            plan.sent(sendMs);
            agent.charge(sendMs);
            const answeredMs = sendMs + 3; // a 3 ms round trip
            plan.settled(sendMs, answeredMs, agent.state(sendMs));
            lastMs = Math.max(sendMs, answeredMs);
          }
          expect(plan.intervalMs).toBeCloseTo(agent.policy.emissionUs / 1000, 6);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('an answer proving someone else drew on the bucket moves the plan later and marks it contended', () => {
    const plan = new RatePlan(published(60, 60, 10));
    const agent = new AgentBucket(agentPolicy(60, 60, 10));
    for (let i = 0; i < 6; i++) agent.charge(0); // another process, same identity
    plan.sent(0);
    agent.charge(0);
    plan.settled(0, 5, agent.state(0)); // r = 3: we would expect 9
    expect(plan.contended).toBe(true);
    // The plan now agrees with the agent: 3 more at once, the 4th not before the agent allows it.
    for (let i = 0; i < 3; i++) {
      expect(plan.conformAtMs(5)).toBe(5);
      plan.sent(5);
    }
    expect(plan.conformAtMs(5)).toBeGreaterThanOrEqual(1_000);
  });

  it('an answer proving the bucket fuller moves the plan earlier, only when it was our one send in flight', () => {
    const plan = new RatePlan(published(60, 60, 1)); // the card says burst 1…
    plan.sent(0);
    plan.sent(0); // …two sends overlap: no correction may trust either answer alone
    plan.settled(0, 1, { states: [{ policy: 'p', remaining: 9, resetSeconds: 1 }] });
    plan.settled(0, 1, { states: [{ policy: 'p', remaining: 8, resetSeconds: 1 }] });
    expect(plan.conformAtMs(1)).toBeGreaterThan(1_000);
    const lone = new RatePlan(published(60, 60, 1));
    lone.sent(0);
    lone.settled(0, 1, { states: [{ policy: 'p', remaining: 1, resetSeconds: 0 }] }); // full
    expect(lone.conformAtMs(1)).toBe(1);
  });

  it('RateLimit-Policy retunes q/w; a card tier with those numbers gives the burst', () => {
    const plan = new RatePlan({
      ...published(60, 60, 10),
      tiers: [
        { name: 'free', limit: 60, windowSeconds: 60, burst: 10 },
        { name: 'pro', limit: 600, windowSeconds: 60, burst: 100 },
      ],
    });
    plan.settled(0, 0, { policies: [{ policy: 'p', limit: 600, windowSeconds: 60 }] });
    expect(plan.intervalMs).toBe(100);
    for (let i = 0; i < 100; i++) plan.sent(0);
    expect(plan.conformAtMs(0)).toBeCloseTo(100, 2);
    // The same card seen again does not undo what the answer taught.
    plan.publish({ ...published(60, 60, 10), tiers: [] });
    expect(plan.intervalMs).toBe(100);
    plan.publish(published(30, 60, 5));
    expect(plan.intervalMs).toBe(2_000);
  });

  it('a rejection with a held slot: nothing new conforms before the slot after it', () => {
    const plan = new RatePlan(published(60, 60, 10));
    plan.onRejected(12_000, true, 0);
    expect(plan.contended).toBe(true);
    expect(plan.conformAtMs(0)).toBeCloseTo(13_000, 2);
    const unreserved = new RatePlan(published(60, 60, 10));
    unreserved.onRejected(12_000, false, 0);
    expect(unreserved.conformAtMs(0)).toBeCloseTo(12_000, 2);
  });
});

describe('ConcurrencyPlan', () => {
  it('counts calls in flight, tells a waiter once when room frees, and grows with the card', () => {
    const tasks = new ConcurrencyPlan('tasks', 2);
    tasks.begin();
    tasks.begin();
    expect(tasks.hasRoom()).toBe(false);
    let told = 0;
    tasks.onRoom(() => told++);
    tasks.onRoom(() => told++);
    tasks.end();
    expect(told).toBe(2);
    expect(tasks.hasRoom()).toBe(true);
    tasks.begin();
    tasks.onRoom(() => told++);
    tasks.publish(3);
    expect(told).toBe(3);
    expect(tasks.max).toBe(3);
    expect(tasks.isIdle()).toBe(false);
  });
});
