/**
 * The planning client in virtual time against the real decision code: `RetryScheduler` with the
 * card the agent publishes (the production card extension, `publishedAgentCard`) in front of a
 * `SimulatedAgent` over a real `MemoryStore`. Planned first sends go when the published policies
 * say they conform (the worked example with no rejection, the README's concurrency limit as a
 * local limit), and a rejection the plan did not foresee — another process using the same
 * identity, a policy that changed, a shared limit — is handled by the hints exactly as without a
 * plan, the plan correcting itself from the next answers.
 */

import type { Policy } from 'a2a-ratelimit';
import { MemoryStore } from 'a2a-ratelimit';
import {
  isRetryBudgetExceededError,
  RetryScheduler,
  type RetrySchedulerOptions,
} from 'a2a-ratelimit/client';
import {
  createVirtualTime,
  seededRandom,
  type VirtualClock,
  WORKED_EXAMPLE_POLICY,
} from 'a2a-ratelimit/simulation';
import { describe, expect, it } from 'vitest';
import { publishedAgentCard, type SeenRequest, SimulatedAgent } from './simulated-agent.js';

const MESSAGES = ['SendMessage', 'SendStreamingMessage'] as const;
/** The README's server policies. */
const README_POLICIES: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: [...MESSAGES],
    limit: 60,
    windowSeconds: 60,
    burst: 10,
  },
  {
    name: 'tasks-per-caller',
    kind: 'concurrency',
    scope: 'caller',
    methods: [...MESSAGES],
    max: 5,
  },
  { name: 'agent-overload', kind: 'overload', maxInFlight: 500, maxEventLoopDelayMs: 250 },
];

interface World {
  vt: VirtualClock;
  agent: SimulatedAgent;
  /** A client of its own (a process), planning from `card` unless told otherwise. */
  client(options?: RetrySchedulerOptions & { card?: unknown; seed?: number }): RetryScheduler;
}

async function world(
  agentPolicies: readonly Policy[],
  options: { cardPolicies?: readonly Policy[]; taskMs?: number } = {},
): Promise<World & { card: unknown }> {
  const vt = createVirtualTime();
  const store = new MemoryStore({ policies: agentPolicies, clock: vt });
  const agent = new SimulatedAgent({
    store,
    clock: vt,
    ...(options.taskMs === undefined
      ? {}
      : { tasks: { durationMs: options.taskMs, sleep: vt.sleep, answerAtEnd: true } }),
  });
  const card = await publishedAgentCard(options.cardPolicies ?? agentPolicies);
  return {
    vt,
    agent,
    card,
    client({ card: given = card, seed = 1, ...rest } = {}) {
      const scheduler = new RetryScheduler({
        clock: vt,
        sleep: vt.sleep,
        random: seededRandom(seed),
        agentDeduplicates: true,
        ...rest,
      });
      scheduler.learnAgentCard(given, { agents: ['agent'] });
      return scheduler;
    },
  };
}

/** `calls` SendMessage calls at once through `scheduler`, counting the client's sends in flight. */
function fanOut(
  w: World,
  scheduler: RetryScheduler,
  calls: number,
  options: { caller?: string; prefix?: string; method?: 'SendMessage' | 'GetTask' } = {},
) {
  const caller = options.caller ?? 'orchestrator-7';
  const method = options.method ?? 'SendMessage';
  const inFlight = { now: 0, peak: 0 };
  const done = Promise.allSettled(
    Array.from({ length: calls }, (_, i) => {
      const send = w.agent.attempt({
        caller,
        method,
        ...(method === 'SendMessage' ? { messageId: `${options.prefix ?? 'm'}-${i + 1}` } : {}),
      });
      const counted: typeof send = async (attemptIndex) => {
        inFlight.now++;
        inFlight.peak = Math.max(inFlight.peak, inFlight.now);
        try {
          return await send(attemptIndex);
        } finally {
          inFlight.now--;
        }
      };
      return scheduler.run({ agent: 'agent', caller, method }, counted);
    }),
  );
  return { done, inFlight };
}

function rejectedOf(requests: readonly SeenRequest[]): SeenRequest[] {
  return requests.filter((r) => !r.admitted);
}

/** Every rejected request was re-sent with its messageId, no earlier than told, and admitted. */
function expectHintsDroveRetries(requests: readonly SeenRequest[], hintedMs: Map<string, number>) {
  for (const r of rejectedOf(requests)) {
    const next = requests.find(
      (n) => n.messageId === r.messageId && n.attemptIndex === r.attemptIndex + 1,
    );
    expect(next, `retry of ${r.messageId}`).toBeDefined();
    expect(next?.admitted).toBe(true);
    expect(next?.atMs).toBeGreaterThanOrEqual(r.atMs + (hintedMs.get(r.messageId ?? '') ?? 0));
  }
}

describe('planned client, alone with the agent', () => {
  it('the worked example: 10 at once, then one per second on the dot, 30 requests, 0 rejections', async () => {
    const w = await world([WORKED_EXAMPLE_POLICY]);
    const scheduler = w.client();
    const { done } = fanOut(w, scheduler, 30);
    await w.vt.runUntilIdle();
    const results = await done;
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    const times = w.agent.requests.map((r) => r.atMs);
    console.log('[planned worked example] send times (ms)', times.join(' '));
    expect(w.agent.requests).toHaveLength(30);
    expect(rejectedOf(w.agent.requests)).toHaveLength(0);
    expect(times.slice(0, 10)).toEqual(Array(10).fill(0));
    // No jitter: the k-th paced send goes at exactly k s (+1 µs of float safety).
    for (const [k, atMs] of times.slice(10).entries()) expect(atMs).toBeCloseTo((k + 1) * 1000, 2);
    expect(w.vt.nowMs()).toBeLessThanOrEqual(21_000);
    expect(scheduler.stats).toMatchObject({ sends: 30, retries: 0, failedCalls: 0 });
  });

  it('README policies (rate + tasks-per-caller max 5), tasks of 1 s: 30 requests, 0 rejections, ≤ 5 in flight', async () => {
    const w = await world(README_POLICIES, { taskMs: 1_000 });
    const { done, inFlight } = fanOut(w, w.client(), 30);
    await w.vt.runUntilIdle();
    await done;
    const planned = { requests: w.agent.requests.length, peak: inFlight.peak, endMs: w.vt.nowMs() };

    const today = await world(README_POLICIES, { taskMs: 1_000 });
    const unplanned = fanOut(today, today.client({ planFromCard: false }), 30);
    await today.vt.runUntilIdle();
    await unplanned.done;
    console.log('[README policies, 30 at once, 1 s tasks]', {
      planned,
      unplanned: { requests: today.agent.requests.length, peak: unplanned.inFlight.peak },
    });
    expect(planned.requests).toBe(30);
    expect(rejectedOf(w.agent.requests)).toHaveLength(0);
    expect(planned.peak).toBe(5);
    expect(today.agent.requests.length).toBeGreaterThan(60);
  });

  it('a method no policy names is not held back; a caller+method bucket is per method', async () => {
    const perMethod: Policy = {
      name: 'per-method',
      kind: 'rate',
      scope: 'caller+method',
      methods: ['SendMessage', 'GetTask'],
      limit: 60,
      windowSeconds: 60,
      burst: 2,
    };
    const w = await world([perMethod]);
    const scheduler = w.client();
    const sends = fanOut(w, scheduler, 3);
    const gets = fanOut(w, scheduler, 3, { method: 'GetTask' });
    await w.vt.runUntilIdle();
    await Promise.all([sends.done, gets.done]);
    const at = (method: string) =>
      w.agent.requests.filter((r) => r.method === method).map((r) => Math.round(r.atMs));
    expect(at('SendMessage')).toEqual([0, 0, 1000]);
    expect(at('GetTask')).toEqual([0, 0, 1000]);
    expect(rejectedOf(w.agent.requests)).toHaveLength(0);
  });

  it('a wait the plan can predict that exceeds maxSingleWaitMs fails at once, unsent', async () => {
    const slow: Policy = {
      ...WORKED_EXAMPLE_POLICY,
      limit: 1,
      windowSeconds: 60,
      burst: 1,
    } as Policy;
    const w = await world([slow]);
    const scheduler = w.client({ maxSingleWaitMs: 30_000 });
    const { done } = fanOut(w, scheduler, 2);
    await w.vt.runUntilIdle();
    const [first, second] = await done;
    expect(first?.status).toBe('fulfilled');
    expect(second?.status === 'rejected' && isRetryBudgetExceededError(second.reason)).toBe(true);
    expect(second?.status === 'rejected' && second.reason.attempts).toBe(0);
    expect(w.agent.requests).toHaveLength(1);
  });
});

describe('planning never replaces the hints', () => {
  it('two processes with one identity: every call completes, rejections are retried as told, no storm', async () => {
    const run = async (planFromCard: boolean) => {
      const w = await world([WORKED_EXAMPLE_POLICY]);
      const a = fanOut(w, w.client({ seed: 1, planFromCard }), 30, { prefix: 'a' });
      const b = fanOut(w, w.client({ seed: 2, planFromCard }), 30, { prefix: 'b' });
      await w.vt.runUntilIdle();
      const results = [...(await a.done), ...(await b.done)];
      return { results, requests: w.agent.requests, seconds: w.vt.nowMs() / 1000 };
    };
    const planned = await run(true);
    const unplanned = await run(false);
    const rejected = rejectedOf(planned.requests);
    console.log('[two processes, one identity, virtual time: every send at the same instants]', {
      planned: { requests: planned.requests.length, rejected: rejected.length, s: planned.seconds },
      unplanned: {
        requests: unplanned.requests.length,
        rejected: rejectedOf(unplanned.requests).length,
        s: unplanned.seconds,
      },
    });
    expect(planned.results.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(planned.requests.filter((r) => r.admitted)).toHaveLength(60);
    // Each call at most twice (refused once, admitted on its first retry): nothing like a storm,
    // and fewer requests than the same two clients without a plan.
    expect(planned.requests.every((r) => r.attemptIndex <= 1)).toBe(true);
    expect(planned.requests.length).toBeLessThan(unplanned.requests.length);
    // The hints drove the retries: each refused message came back, 1 s or more later, and got in.
    expectHintsDroveRetries(
      planned.requests,
      new Map(rejected.map((r) => [r.messageId ?? '', 1_000])),
    );
  });

  it('a policy that changed (card 60/min burst 10, agent 30/min burst 5): the first burst is corrected by hints, then the plan follows RateLimit-Policy', async () => {
    const changed: Policy = { ...WORKED_EXAMPLE_POLICY, limit: 30, burst: 5 } as Policy;
    const w = await world([changed], { cardPolicies: [WORKED_EXAMPLE_POLICY] });
    const scheduler = w.client();
    const { done } = fanOut(w, scheduler, 20);
    await w.vt.runUntilIdle();
    const results = await done;
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    const rejected = rejectedOf(w.agent.requests);
    console.log('[policy changed]', {
      requests: w.agent.requests.length,
      rejected: rejected.length,
    });
    // Only the card's extra burst (10 − 5) was refused, each once, all in the opening instant.
    expect(rejected).toHaveLength(5);
    expect(rejected.every((r) => r.atMs === 0 && r.attemptIndex === 0)).toBe(true);
    expect(w.agent.requests.filter((r) => r.attemptIndex > 0).every((r) => r.admitted)).toBe(true);
    // Later first sends were paced at the agent's 2 s, and none was refused.
    const later = w.agent.requests.filter((r) => r.attemptIndex === 0 && r.atMs > 0);
    expect(later.length).toBeGreaterThan(0);
    expect(later.every((r) => r.admitted)).toBe(true);
  });

  it('a shared limit the card cannot plan for (agent-wide): left to the hints, nothing is lost', async () => {
    const agentWide: Policy = {
      name: 'agent-wide',
      kind: 'rate',
      scope: 'agent',
      methods: ['SendMessage'],
      limit: 10,
      windowSeconds: 1,
      burst: 5,
    };
    const w = await world([WORKED_EXAMPLE_POLICY, agentWide]);
    const one = fanOut(w, w.client({ seed: 3 }), 10, { caller: 'a', prefix: 'a' });
    const two = fanOut(w, w.client({ seed: 4 }), 10, { caller: 'b', prefix: 'b' });
    await w.vt.runUntilIdle();
    const results = [...(await one.done), ...(await two.done)];
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(w.agent.requests.filter((r) => r.admitted)).toHaveLength(20);
    // The agent-wide policy holds no slots: a retry may be refused again, as without a plan.
    expect(rejectedOf(w.agent.requests).length).toBeGreaterThan(0);
    expect(w.agent.requests.every((r) => r.attemptIndex <= 5)).toBe(true);
  });

  it('once a plan is contended (another sender), its planned sends get jitter within one interval', async () => {
    const w = await world([WORKED_EXAMPLE_POLICY]);
    // Someone else spent the whole burst just before: our first five are refused (held slots).
    const other = fanOut(w, w.client({ planFromCard: false }), 10, { prefix: 'o' });
    await w.vt.advance(0);
    const scheduler = w.client({ seed: 9 });
    const first = fanOut(w, scheduler, 5, { prefix: 'p' });
    await w.vt.advance(0);
    const later = fanOut(w, scheduler, 5, { prefix: 'q' });
    await w.vt.runUntilIdle();
    await Promise.all([other.done, first.done, later.done]);
    const paced = w.agent.requests
      .filter((r) => r.messageId?.startsWith('q-'))
      .map((r) => ({ atMs: r.atMs, admitted: r.admitted }));
    console.log(
      '[contended] planned first sends (ms)',
      paced.map((p) => p.atMs),
    );
    expect(paced).toHaveLength(5);
    expect(paced.every((p) => p.admitted)).toBe(true);
    // The held slots end at 5 s; then one slot a second, each send within a second after it.
    for (const [k, p] of paced.entries()) {
      expect(p.atMs).toBeGreaterThanOrEqual(6_000 + k * 1000);
      expect(p.atMs).toBeLessThan(6_000 + (k + 1) * 1000 + 1000);
    }
    expect(paced.some((p) => p.atMs % 1000 > 1)).toBe(true);
  });

  it('planFromCard: false is the client without a plan (the worked example: 50 requests)', async () => {
    const w = await world([WORKED_EXAMPLE_POLICY]);
    const { done } = fanOut(w, w.client({ planFromCard: false }), 30);
    await w.vt.runUntilIdle();
    await done;
    expect(w.agent.requests).toHaveLength(50);
  });
});
