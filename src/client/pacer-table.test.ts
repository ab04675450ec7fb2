import { describe, expect, it } from 'vitest';
import { createVirtualTime } from '../simulation/virtual-time.js';
import {
  type CardRateLimits,
  RATE_LIMIT_CARD_URI,
  readRateLimitCard,
} from '../wire/rate-limit-card.js';
import type { RetryHint } from '../wire/retry-hint.js';
import { MAX_POLICIES_PER_PACER } from './pacer.js';
import { PacerTable } from './pacer-table.js';
import type { AttemptOutcome } from './retry-scheduler.js';
import { RetryScheduler } from './retry-scheduler.js';

/** An agent that refuses with "retry in `delayMs`", naming `policy`. */
function refused(policy: string, delayMs: number) {
  const hint: RetryHint = { kind: 'quota', delayMs, delaySource: 'ratelimit', policy };
  return async (): Promise<AttemptOutcome<string>> => ({
    ok: false,
    hint,
    failure: { value: 'refused' },
  });
}

function setup(maxGates = 1_000) {
  const vt = createVirtualTime();
  // No retries: a refused call ends at once, the wait it learned stays in its gate.
  const scheduler = new RetryScheduler({
    clock: vt,
    sleep: vt.sleep,
    maxRetries: 0,
    maxHintedRetries: 0,
    maxGates,
  });
  const call = (agent: string, attempt: () => Promise<AttemptOutcome<string>>) =>
    scheduler.run({ agent, caller: 'me', method: 'SendMessage' }, attempt).catch(() => 'failed');
  return { vt, scheduler, call };
}

describe('PacerTable against hostile agents', () => {
  it("3,000 agents each asking for 30 s do not push a legitimate agent's own 30 s wait out", async () => {
    const { vt, scheduler, call } = setup();
    await call('legit', refused('per-caller', 30_000));
    for (let i = 0; i < 3_000; i++) await call(`hostile-${i}`, refused('per-caller', 30_000));
    // Past maxGates only by the 3,001 gates holding a live wait (and the one just used).
    expect(scheduler.pacers.size).toBeLessThanOrEqual(3_002);

    let sentAtMs: number | undefined;
    const next = scheduler.run(
      { agent: 'legit', caller: 'me', method: 'SendMessage' },
      async () => {
        sentAtMs = vt.nowMs();
        return { ok: true, value: 'ok' };
      },
    );
    await vt.advance(29_999);
    expect(sentAtMs).toBeUndefined();
    await vt.advance(1);
    expect(await next).toBe('ok');
    expect(sentAtMs).toBe(30_000);

    // Holds that ended are dropped at the next new gate: the table is back within maxGates.
    await vt.advance(1_000);
    await call('newcomer', async () => ({ ok: true, value: 'ok' }));
    expect(scheduler.pacers.size).toBeLessThanOrEqual(1_000);
  });

  it('idle gates go first, least recently used; a live hold is never dropped to make room', async () => {
    const { vt, scheduler, call } = setup(10);
    await call('held', refused('p', 30_000));
    for (let i = 0; i < 50; i++) await call(`idle-${i}`, async () => ({ ok: true, value: 'ok' }));
    expect(scheduler.pacers.size).toBeLessThanOrEqual(10);
    let sent = false;
    void scheduler.run({ agent: 'held', caller: 'me', method: 'SendMessage' }, async () => {
      sent = true;
      return { ok: true, value: 'ok' };
    });
    await vt.advance(29_999);
    expect(sent).toBe(false);
    await vt.advance(1);
    expect(sent).toBe(true);
  });

  it('one agent naming a new policy in every refusal mints at most maxGroupsPerCaller + 1 gates, and its waits still hold', async () => {
    const { vt, scheduler, call } = setup();
    // 500 calls at once, each refused naming a policy never seen before.
    await Promise.all(
      Array.from({ length: 500 }, (_, i) => call('minting', refused(`policy-${i}`, 30_000))),
    );
    expect(scheduler.pacers.size).toBeLessThanOrEqual(33 + 1); // + the SendMessage gate
    let sentAtMs: number | undefined;
    const next = scheduler.run(
      { agent: 'minting', caller: 'me', method: 'SendMessage' },
      async () => {
        sentAtMs = vt.nowMs();
        return { ok: true, value: 'ok' };
      },
    );
    await vt.advance(29_999);
    expect(sentAtMs).toBeUndefined();
    await vt.advance(1);
    expect(await next).toBe('ok');
    expect(sentAtMs).toBe(30_000);
  });

  it('one bound over every pacer: idle lanes of busy pacers go too, their live holds stay', async () => {
    const { vt, scheduler, call } = setup(6);
    const ok = async (): Promise<AttemptOutcome<string>> => ({ ok: true, value: 'ok' });
    const callAs = (
      agent: string,
      method: string,
      attempt: () => Promise<AttemptOutcome<string>>,
    ) => scheduler.run({ agent, caller: 'me', method }, attempt).catch(() => 'failed');
    // A busy pacer: a 30 s wait, and four idle lanes (SendMessage's, and three methods').
    await call('a', refused('p', 30_000));
    for (const method of ['GetTask', 'ListTasks', 'CancelTask']) await callAs('a', method, ok);
    expect(scheduler.pacers.size).toBe(5);
    // Another busy pacer needs two entries: no pacer is idle, so a's idle lanes make room.
    await call('b', refused('q', 30_000));
    expect(scheduler.pacers.size).toBeLessThanOrEqual(6);
    const sentAtMs: Record<string, number> = {};
    const next = ['a', 'b'].map((agent) =>
      scheduler.run({ agent, caller: 'me', method: 'SendMessage' }, async () => {
        sentAtMs[agent] = vt.nowMs();
        return { ok: true, value: 'ok' };
      }),
    );
    await vt.advance(30_000);
    expect(await Promise.all(next)).toEqual(['ok', 'ok']);
    expect(sentAtMs).toEqual({ a: 30_000, b: 30_000 });
  });
});

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

describe("PacerTable: the cards' buckets", () => {
  it('plans caller-scoped policies of the method only; shared scopes and other methods get none', () => {
    const table = new PacerTable({ clock });
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
    const table = new PacerTable({ clock });
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
    const table = new PacerTable({ clock });
    table.learn('a', limits(perCaller));
    table.learn('a', limits({ ...perCaller, limit: 600, burst: 100, tier: 'pro' }), 'pro');
    expect(table.planFor('a', 'pro', 'SendMessage')?.rates[0]?.intervalMs).toBe(100);
    expect(table.planFor('a', 'free', 'SendMessage')?.rates[0]?.intervalMs).toBe(1000);
    expect(table.knows('b', 'pro')).toBe(false);
  });

  it('keeps at most maxPlans, dropping idle plans first; busy ones stay', () => {
    const table = new PacerTable({ clock, maxEntries: 3 });
    table.learn('a', limits(perCaller));
    const busy = table.planFor('a', 'busy', 'SendMessage');
    busy?.rates[0]?.sent(0);
    for (let i = 0; i < 20; i++) table.planFor('a', `idle-${i}`, 'SendMessage');
    expect(table.size).toBeLessThanOrEqual(3);
    expect(table.planFor('a', 'busy', 'SendMessage')?.rates[0]).toBe(busy?.rates[0]);
  });

  it('cards of other agents do not push out the card of an agent whose plan holds sends back', () => {
    const now = { ms: 0 };
    const table = new PacerTable({ clock: { nowMs: () => now.ms }, maxEntries: 3 });
    table.learn('legit', limits(perCaller));
    const held = table.planFor('legit', 'c', 'SendMessage');
    for (let i = 0; i < 10; i++) held?.rates[0]?.sent(0); // the burst is spent: it holds sends back
    for (let i = 0; i < 50; i++) table.learn(`other-${i}`, limits(perCaller));
    expect(table.knows('legit')).toBe(true);
    expect(table.planFor('legit', 'c', 'SendMessage')?.rates[0]).toBe(held?.rates[0]);
    expect(held?.rates[0]?.conformAtMs(0)).toBeGreaterThan(0);
    // Once answered and refilled (10 s after the first answer), it is idle: its card may go.
    for (let i = 0; i < 10; i++) held?.rates[0]?.settled(0, 1);
    now.ms = 11_000;
    for (let i = 50; i < 60; i++) table.learn(`other-${i}`, limits(perCaller));
    expect(table.knows('legit')).toBe(false);
  });

  it('a card listing thousands of caller-scoped policies plans a call by at most MAX_POLICIES_PER_PACER', () => {
    const table = new PacerTable({ clock });
    table.learn(
      'hostile',
      limits(...Array.from({ length: 2_000 }, (_, i) => ({ ...perCaller, name: `p-${i}` }))),
    );
    expect(table.planFor('hostile', 'c', 'SendMessage')?.rates).toHaveLength(
      MAX_POLICIES_PER_PACER,
    );
    expect(table.size).toBe(MAX_POLICIES_PER_PACER);
  });
});

describe('PacerTable and a usage budget on the card', () => {
  it('a card plan paces requests by the request policy only, never by the token budget', () => {
    const table = new PacerTable({ clock: { nowMs: () => 0 } });
    const card = readRateLimitCard({
      capabilities: {
        extensions: [
          {
            uri: RATE_LIMIT_CARD_URI,
            params: {
              policies: [
                {
                  name: 'tokens',
                  kind: 'rate',
                  scope: 'caller',
                  limit: 10_000,
                  windowSeconds: 60,
                  unit: 'tokens',
                },
                { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 60, windowSeconds: 60 },
              ],
            },
          },
        ],
      },
    });
    if (card === undefined) throw new Error('card not read');
    expect(card.policies.find((p) => p.name === 'tokens')).toMatchObject({
      kind: 'rate',
      limit: 10_000,
      unit: 'tokens',
    });
    table.learn('agent', card);
    const plan = table.planFor('agent', 'alice', 'SendMessage');
    expect(plan?.rates.map((p) => p.policy)).toEqual(['per-caller']);
    table.learn('other', { ...card, policies: card.policies.filter((p) => p.name === 'tokens') });
    expect(table.planFor('other', 'alice', 'SendMessage')).toBeUndefined();
  });
});
