/**
 * The client's request pacing and a usage policy: `"tokens";r=…` answers from the CLI's simulated
 * agent do not pace requests (split from test/quota-units.test.ts).
 */

import type { Policy } from 'a2a-ratelimit';
import { MemoryStore } from 'a2a-ratelimit';
import { RetryScheduler } from 'a2a-ratelimit/client';
import { createVirtualTime, seededRandom } from 'a2a-ratelimit/simulation';
import { describe, expect, it } from 'vitest';
import { SimulatedAgent } from './simulated-agent.js';

const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage'],
  limit: 10_000,
  windowSeconds: 60,
};

describe('the gate and a token budget', () => {
  it('"tokens";r=… answers do not pace requests: 30 calls all leave at once', async () => {
    // 10 tokens a minute with 9 already used and nothing charged at admission: every call is
    // admitted (one token is left) and answered "tokens";r=1. Read as requests (1 left, one more
    // every 6 s) the gate would hold the calls back for minutes.
    const vt = createVirtualTime();
    // `estimate: 0` opts out of the default reservation of the whole budget.
    const policies: Policy[] = [{ ...TOKENS, limit: 10, windowSeconds: 60, estimate: 0 }];
    const store = new MemoryStore({ policies, clock: vt });
    await store.chargeUsage({ caller: 'a', method: 'SendMessage' }, 9);
    const agent = new SimulatedAgent({ store, clock: vt });
    const scheduler = new RetryScheduler({
      clock: vt,
      sleep: vt.sleep,
      random: seededRandom(1),
      maxSingleWaitMs: Number.POSITIVE_INFINITY,
      budgetMs: Number.POSITIVE_INFINITY,
    });
    const send = (i: number) =>
      scheduler.run(
        { agent: 'agent', caller: 'a', method: 'SendMessage' },
        agent.attempt({ caller: 'a', method: 'SendMessage', messageId: `m-${i}` }),
      );
    const first = await (async () => {
      const p = send(0);
      await vt.runUntilIdle();
      return p;
    })();
    expect(first.admitted).toBe(true);
    const rest = Array.from({ length: 29 }, (_, i) => send(i + 1));
    await vt.runUntilIdle();
    const results = await Promise.all(rest);
    expect(results.every((r) => r.admitted)).toBe(true);
    expect(agent.requests).toHaveLength(30);
    expect(Math.max(...agent.requests.map((r) => r.atMs))).toBe(0);
  });
});
