/**
 * `createRetryingFetch` under the SDK's own JSON-RPC and REST clients, against a real SDK agent on
 * 127.0.0.1 with three kinds of gatekeeper in front: our wire encoders over a real MemoryStore,
 * spec-literal bare errors, and a gateway's HTML page. Time is virtual (auto-advancing) on both
 * sides, so arrival times are exact and nothing sleeps on real time.
 */
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import type { RatePolicy } from 'a2a-ratelimit';
import { encodeRestRejection, MemoryStore } from 'a2a-ratelimit';
import type { RetrySchedulerOptions } from 'a2a-ratelimit/client';
import {
  createRetryingFetch,
  isRateLimitedError,
  isRetryBudgetExceededError,
} from 'a2a-ratelimit/client';
import { createVirtualTime, type VirtualClock } from 'a2a-ratelimit/simulation';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeJsonRpcRejection } from './rejection-wire.helpers.js';
import { type Gatekeeper, startSdkAgent, userMessage } from './sdk-agent.helpers.js';

const BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function setup(
  gatekeeper: (vt: VirtualClock) => Gatekeeper,
  binding: (typeof BINDINGS)[number],
  options: RetrySchedulerOptions = {},
) {
  const vt = createVirtualTime({ startMs: 1_000_000, autoAdvance: true });
  const agent = await startSdkAgent({ gatekeeper: gatekeeper(vt), nowMs: () => vt.nowMs() });
  closers.push(agent.close);
  const fetchImpl = createRetryingFetch({
    clock: vt,
    sleep: vt.sleep,
    random: () => 0.25,
    ...options,
  });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        new JsonRpcTransportFactory({ fetchImpl }),
        new RestTransportFactory({ fetchImpl }),
      ],
      preferredTransports: [binding],
    }),
  );
  const client = await factory.createFromUrl(agent.baseUrl);
  return { vt, agent, client };
}

/** Our encoders over a real MemoryStore: 60 per minute, burst 1, so the 2nd call waits 1 s. */
function limiter(vt: VirtualClock): Gatekeeper {
  const policy: RatePolicy = {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage', 'SendStreamingMessage'],
    limit: 60,
    windowSeconds: 60,
    burst: 1,
  };
  const store = new MemoryStore({ policies: [policy], clock: vt });
  return (seen, _index, body) => {
    const decision = store.decideSync({
      caller: 'anonymous',
      method: seen.method,
      messageId: seen.messageId,
    });
    if (decision.admitted) return undefined;
    const options = { domain: 'agents.example.com', limits: decision.limits };
    if (seen.binding === 'rest') return encodeRestRejection(decision.rejection, options);
    const id = (body as { id?: number }).id ?? null;
    return encodeJsonRpcRejection(decision.rejection, { ...options, id });
  };
}

describe.each(BINDINGS)('retrying fetch with the SDK %s client', (binding) => {
  it('against our encoding: succeeds, never retries before the hinted time, same messageId', async () => {
    const { agent, client } = await setup(limiter, binding);
    const results = await Promise.all(
      ['m-1', 'm-2', 'm-3'].map((id) => client.sendMessage({ message: userMessage(id) } as never)),
    );
    expect(results).toHaveLength(3);
    const refusals = agent.arrivals.filter((a) => a.refusedWith !== undefined);
    expect(refusals.length).toBeGreaterThanOrEqual(2);
    for (const refusal of refusals) {
      const next = agent.arrivals.find(
        (a) => a.messageId === refusal.messageId && a.atMs > refusal.atMs,
      );
      expect(next).toBeDefined();
      expect(next?.atMs).toBeGreaterThanOrEqual(
        refusal.atMs + (refusal.retryAfterSeconds ?? 0) * 1000,
      );
    }
    // Every call admitted exactly once, on the messageId it started with.
    const admitted = agent.arrivals
      .filter((a) => a.refusedWith === undefined)
      .map((a) => a.messageId);
    expect(admitted.sort()).toEqual(['m-1', 'm-2', 'm-3']);
  });

  it('retries a stream refused before its first event', async () => {
    const { agent, client } = await setup(limiter, binding);
    await client.sendMessage({ message: userMessage('warm-up') } as never);
    const events: unknown[] = [];
    for await (const event of client.sendMessageStream({ message: userMessage('s-1') } as never)) {
      events.push(event);
    }
    expect(events.length).toBeGreaterThanOrEqual(1);
    const s1 = agent.arrivals.filter((a) => a.messageId === 's-1');
    expect(s1.map((a) => a.refusedWith)).toEqual([binding === 'JSONRPC' ? 200 : 429, undefined]);
    expect((s1[1]?.atMs ?? 0) - (s1[0]?.atMs ?? 0)).toBeGreaterThanOrEqual(
      (s1[0]?.retryAfterSeconds ?? 0) * 1000,
    );
  });

  it('fails at once with RetryBudgetExceededError when the hint exceeds maxSingleWaitMs', async () => {
    const { vt, agent, client } = await setup(limiter, binding, { maxSingleWaitMs: 500 });
    await client.sendMessage({ message: userMessage('first') } as never);
    const startMs = vt.nowMs();
    const error = await client
      .sendMessage({ message: userMessage('second') } as never)
      .catch((e: unknown) => e);
    expect(isRetryBudgetExceededError(error)).toBe(true);
    expect(isRetryBudgetExceededError(error) && error.hint.delayMs).toBe(1_000);
    expect(isRetryBudgetExceededError(error) && error.refusedBy).toBe('maxSingleWaitMs');
    expect((error as Error).message).toContain('policy "per-caller"');
    expect((error as Error).message).toContain('maxSingleWaitMs');
    expect(vt.nowMs()).toBe(startMs);
    expect(agent.arrivals.filter((a) => a.messageId === 'second')).toHaveLength(1);
  });

  it('a wait longer than what is left of budgetMs names budgetMs', async () => {
    const { client } = await setup(limiter, binding, { budgetMs: 400 });
    await client.sendMessage({ message: userMessage('first') } as never);
    const error = await client
      .sendMessage({ message: userMessage('second') } as never)
      .catch((e: unknown) => e);
    expect(isRetryBudgetExceededError(error)).toBe(true);
    if (!isRetryBudgetExceededError(error)) return;
    expect(error.refusedBy).toBe('budgetMs');
    expect(error.message).toMatch(
      /Retry budget exceeded \(budgetMs\): policy "per-caller" asks to wait 1000 ms/,
    );
  });

  it('isRateLimitedError recognises a quota stop from the SDK client, with its hint', async () => {
    const { client } = await setup(limiter, binding, { maxHintedRetries: 0 });
    await client.sendMessage({ message: userMessage('first') } as never);
    const error = await client
      .sendMessage({ message: userMessage('second') } as never)
      .catch((e: unknown) => e);
    expect(isRateLimitedError(error)).toBe(true);
    if (!isRateLimitedError(error)) return;
    expect(error.hint.kind).toBe('quota');
    expect(error.hint.policy).toBe('per-caller');
    expect(error.hint.delayMs).toBe(1_000);
  });
});

/** Spec-literal: the first copy of each message gets `status` with no retry guidance at all. */
function bare(status: 500 | 503): () => Gatekeeper {
  return () => (seen, index, body) => {
    if (index > 0) return undefined;
    if (seen.binding === 'jsonrpc' && status === 500) {
      const id = (body as { id?: number }).id ?? null;
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          error: { code: -32603, message: 'Internal error' },
        }),
      };
    }
    return { status, headers: { 'content-type': 'text/plain' }, body: '' };
  };
}

describe.each(BINDINGS)('spec-literal and gateway answers with the SDK %s client', (binding) => {
  it('bare 503 (overload, no hint): retried with backoff for SendMessage, same messageId', async () => {
    const { agent, client } = await setup(bare(503), binding);
    await client.sendMessage({ message: userMessage('o-1') } as never);
    const arrivals = agent.arrivals.filter((a) => a.messageId === 'o-1');
    expect(arrivals.map((a) => a.refusedWith)).toEqual([503, undefined]);
    expect((arrivals[1]?.atMs ?? 0) - (arrivals[0]?.atMs ?? 0)).toBe(0.25 * 500); // full jitter
  });

  it('bare 500 / -32603: SendMessage is not repeated unless the agent deduplicates', async () => {
    const plain = await setup(bare(500), binding);
    await expect(
      plain.client.sendMessage({ message: userMessage('t-1') } as never),
    ).rejects.toThrow();
    expect(plain.agent.arrivals.filter((a) => a.messageId === 't-1')).toHaveLength(1);

    const dedup = await setup(bare(500), binding, { agentDeduplicates: true });
    await dedup.client.sendMessage({ message: userMessage('t-2') } as never);
    expect(dedup.agent.arrivals.filter((a) => a.messageId === 't-2')).toHaveLength(2);
  });

  it('gateway HTML 502 with Retry-After: waits at least that long, then succeeds', async () => {
    const gateway: Gatekeeper = (_seen, index) =>
      index > 0
        ? undefined
        : {
            status: 502,
            headers: { 'content-type': 'text/html', 'retry-after': '3' },
            body: '<html><h1>502 Bad Gateway</h1></html>',
          };
    const { agent, client } = await setup(() => gateway, binding, { agentDeduplicates: true });
    await client.sendMessage({ message: userMessage('g-1') } as never);
    const arrivals = agent.arrivals.filter((a) => a.messageId === 'g-1');
    expect(arrivals.map((a) => a.refusedWith)).toEqual([502, undefined]);
    expect((arrivals[1]?.atMs ?? 0) - (arrivals[0]?.atMs ?? 0)).toBeGreaterThanOrEqual(3_000);
  });

  it('gateway HTML 502 on GetTask: idempotent, retried without deduplication', async () => {
    const gateway: Gatekeeper = (seen, index) =>
      seen.method === 'GetTask' && index === 0
        ? {
            status: 502,
            headers: { 'content-type': 'text/html' },
            body: '<html>Bad Gateway</html>',
          }
        : undefined;
    const { agent, client } = await setup(() => gateway, binding);
    // The task does not exist: the SDK's own TaskNotFound error must come out after the retry.
    await expect(client.getTask({ id: 'no-such-task' } as never)).rejects.toThrow(/not found/i);
    expect(agent.arrivals.filter((a) => a.method === 'GetTask').map((a) => a.refusedWith)).toEqual([
      502,
      undefined,
    ]);
  });
});
