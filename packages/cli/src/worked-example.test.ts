/**
 * The seed's worked example, end to end in virtual time with the real decision code: an
 * orchestrator fans out 30 SendMessage calls at once to a research agent limited to 60 per minute
 * per caller with a burst of 10. Against our encoding, the client waits exactly as told; against a
 * spec-literal bare 500 over plain GCRA, a naive backoff client wastes retries and abandons calls.
 */

import type { RatePolicy } from 'a2a-ratelimit';
import { MemoryStore } from 'a2a-ratelimit';
import { RetryScheduler, retryErrorOf } from 'a2a-ratelimit/client';
import { createVirtualTime, seededRandom } from 'a2a-ratelimit/simulation';
import { describe, expect, it } from 'vitest';
import { SimulatedAgent, type SimulatedResult } from './simulated-agent.js';

const perCaller: RatePolicy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage'],
  limit: 60,
  windowSeconds: 60,
  burst: 10,
};
const CALLS = 30;

async function fanOut(scheduler: RetryScheduler, agent: SimulatedAgent) {
  return Promise.allSettled(
    Array.from({ length: CALLS }, (_, i) =>
      scheduler.run(
        { agent: 'research-agent', caller: 'orchestrator-7', method: 'SendMessage' },
        agent.attempt({ caller: 'orchestrator-7', method: 'SendMessage', messageId: `m-${i}` }),
      ),
    ),
  );
}

function admittedOf(results: PromiseSettledResult<SimulatedResult>[]): number {
  return results.filter((r) => r.status === 'fulfilled' && r.value.admitted).length;
}

describe('worked example: 30 calls at once to a 60/min burst-10 agent', () => {
  it('with RetryInfo: 10 admitted at once, 20 on their first retry, ≤ 21 s, 50 requests', async () => {
    const vt = createVirtualTime();
    const store = new MemoryStore({ policies: [perCaller], clock: vt });
    const agent = new SimulatedAgent({ store, clock: vt });
    const scheduler = new RetryScheduler({ clock: vt, sleep: vt.sleep, random: seededRandom(7) });

    const settled = fanOut(scheduler, agent);
    await vt.runUntilIdle();
    const results = await settled;
    const elapsedMs = vt.nowMs();

    const first = agent.requests.filter((r) => r.attemptIndex === 0);
    const retries = agent.requests.filter((r) => r.attemptIndex > 0);
    const client = { admitted: admittedOf(results), retries: scheduler.stats.retries, elapsedMs };
    const server = {
      requests: agent.requests.length,
      admitted: agent.requests.filter((r) => r.admitted).length,
      rejected: agent.requests.filter((r) => !r.admitted).length,
    };
    console.log('[worked example, RetryInfo] client', client, 'agent', server);

    expect(first.filter((r) => r.admitted && r.atMs === 0)).toHaveLength(10);
    expect(first.filter((r) => !r.admitted)).toHaveLength(20);
    expect(retries).toHaveLength(20);
    expect(retries.every((r) => r.admitted && r.attemptIndex === 1)).toBe(true);
    expect(client.admitted).toBe(CALLS);
    expect(elapsedMs).toBeLessThanOrEqual(21_000);
    expect(server.requests).toBe(50);
    // Each retry reuses its messageId and comes no earlier than its slot (k seconds for the k-th).
    const slots = retries.map((r) => r.atMs).sort((a, b) => a - b);
    for (const [k, atMs] of slots.entries()) expect(atMs).toBeGreaterThanOrEqual((k + 1) * 1000);
    expect(new Set(retries.map((r) => r.messageId)).size).toBe(20);
  });

  it('bare 500 over plain GCRA, naive backoff client: wasted retries and abandoned calls', async () => {
    const vt = createVirtualTime();
    const store = new MemoryStore({
      policies: [perCaller],
      holds: { maxHoldsPerKey: 0 },
      clock: vt,
    });
    const agent = new SimulatedAgent({ store, clock: vt, mode: 'bare-500' });
    const naive = new RetryScheduler({
      clock: vt,
      sleep: vt.sleep,
      random: seededRandom(7),
      agentDeduplicates: true, // so that a 500 on SendMessage is retried at all
      maxRetries: 4,
      backoffBaseMs: 500,
      budgetMs: 30_000,
    });

    const settled = fanOut(naive, agent);
    await vt.runUntilIdle();
    const results = await settled;

    const abandoned = results.filter(
      (r) =>
        (r.status === 'fulfilled' && !r.value.admitted) ||
        (r.status === 'rejected' && retryErrorOf(r.reason) !== undefined),
    ).length;
    const rejectedRetries = agent.requests.filter((r) => r.attemptIndex > 0 && !r.admitted).length;
    const client = {
      admitted: admittedOf(results),
      abandoned,
      retries: naive.stats.retries,
      elapsedMs: vt.nowMs(),
    };
    const server = {
      requests: agent.requests.length,
      admitted: agent.requests.filter((r) => r.admitted).length,
      rejected: agent.requests.filter((r) => !r.admitted).length,
      rejectedRetries,
    };
    console.log('[worked example, bare 500] client', client, 'agent', server);

    expect(rejectedRetries).toBeGreaterThanOrEqual(20);
    expect(abandoned).toBeGreaterThanOrEqual(1);
    expect(client.admitted + abandoned).toBe(CALLS);
  });
});
