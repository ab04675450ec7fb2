import { describe, expect, it } from 'vitest';
import type { CardRateLimits } from '../wire/rate-limit-card.js';
import { MAX_PLANNED_POLICIES, SendPlanTable } from './send-plan-table.js';

const clock = { nowMs: () => 0 };

function limits(...policies: CardRateLimits['policies']): CardRateLimits {
  return { policies, deduplicatesMessageIds: true };
}

const perCaller = {
  kind: 'rate',
  name: 'per-caller',
  scope: 'caller',
  methods: ['SendMessage'],
  limit: 60,
  windowSeconds: 60,
  burst: 10,
  tiers: [],
} as const;

describe('SendPlanTable', () => {
  it('plans caller-scoped policies of the method only; shared scopes and other methods get none', () => {
    const table = new SendPlanTable({ clock });
    table.learn(
      'a',
      limits(
        perCaller,
        { ...perCaller, name: 'per-tenant', scope: 'tenant' },
        { kind: 'concurrency', name: 'tasks', scope: 'caller', methods: ['SendMessage'], max: 5 },
      ),
    );
    const plan = table.planFor('a', 'c', 'SendMessage');
    expect(plan?.rates.map((p) => p.policy)).toEqual(['per-caller']);
    expect(plan?.concurrency.map((p) => p.policy)).toEqual(['tasks']);
    expect(table.planFor('a', 'c', 'GetTask')).toBeUndefined();
    expect(table.planFor('other-agent', 'c', 'SendMessage')).toBeUndefined();
    expect(table.knows('a')).toBe(true);
    expect(table.knows('other-agent', 'c')).toBe(false);
  });

  it('one plan per (agent, caller, bucket): calls share it, callers do not, caller+method splits', () => {
    const table = new SendPlanTable({ clock });
    table.learn(
      'a',
      limits(perCaller, {
        ...perCaller,
        name: 'per-method',
        scope: 'caller+method',
        methods: ['SendMessage', 'GetTask'],
      }),
    );
    const one = table.planFor('a', 'c', 'SendMessage');
    const two = table.planFor('a', 'c', 'SendMessage');
    expect(one?.rates[0]).toBe(two?.rates[0]);
    expect(table.planFor('a', 'd', 'SendMessage')?.rates[0]).not.toBe(one?.rates[0]);
    const perMethod = (m: string) =>
      table.planFor('a', 'c', m)?.rates.find((p) => p.policy === 'per-method');
    expect(perMethod('SendMessage')).not.toBe(perMethod('GetTask'));
  });

  it("a caller's extended card replaces the public policy of the same name, for that caller only", () => {
    const table = new SendPlanTable({ clock });
    table.learn('a', limits(perCaller));
    table.learn('a', limits({ ...perCaller, limit: 600, burst: 100, tier: 'pro' }), 'pro');
    expect(table.planFor('a', 'pro', 'SendMessage')?.rates[0]?.intervalMs).toBe(100);
    expect(table.planFor('a', 'free', 'SendMessage')?.rates[0]?.intervalMs).toBe(1000);
    expect(table.knows('b', 'pro')).toBe(false);
  });

  it('keeps at most maxPlans, dropping idle plans first; busy ones stay', () => {
    const table = new SendPlanTable({ clock, maxPlans: 3 });
    table.learn('a', limits(perCaller));
    const busy = table.planFor('a', 'busy', 'SendMessage');
    busy?.begin(0);
    for (let i = 0; i < 20; i++) table.planFor('a', `idle-${i}`, 'SendMessage');
    expect(table.size).toBeLessThanOrEqual(3);
    expect(table.planFor('a', 'busy', 'SendMessage')?.rates[0]).toBe(busy?.rates[0]);
  });

  it('cards of other agents do not push out the card of an agent whose plan holds sends back', () => {
    const now = { ms: 0 };
    const table = new SendPlanTable({ clock: { nowMs: () => now.ms }, maxPlans: 3 });
    table.learn('legit', limits(perCaller));
    const held = table.planFor('legit', 'c', 'SendMessage');
    for (let i = 0; i < 10; i++) held?.begin(0); // the burst is spent: the plan holds sends back
    for (let i = 0; i < 50; i++) table.learn(`other-${i}`, limits(perCaller));
    expect(table.knows('legit')).toBe(true);
    expect(table.planFor('legit', 'c', 'SendMessage')?.rates[0]).toBe(held?.rates[0]);
    expect(held?.releaseAtMs(0)).toBeGreaterThan(0);
    // Once answered and refilled (10 s after the first answer), it is idle: its card may go.
    for (let i = 0; i < 10; i++) held?.settled(0, 1);
    now.ms = 11_000;
    for (let i = 50; i < 60; i++) table.learn(`other-${i}`, limits(perCaller));
    expect(table.knows('legit')).toBe(false);
  });

  it('a card listing thousands of caller-scoped policies plans a call by at most MAX_PLANNED_POLICIES', () => {
    const table = new SendPlanTable({ clock });
    table.learn(
      'hostile',
      limits(...Array.from({ length: 2_000 }, (_, i) => ({ ...perCaller, name: `p-${i}` }))),
    );
    expect(table.planFor('hostile', 'c', 'SendMessage')?.rates).toHaveLength(MAX_PLANNED_POLICIES);
    expect(table.size).toBe(MAX_PLANNED_POLICIES);
  });
});
