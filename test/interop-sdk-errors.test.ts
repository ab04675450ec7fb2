/**
 * The guards (`isRateLimitedError`, `isAgentOverloadedError`, `retryErrorOf`) on the errors the
 * SDK's own clients throw — no retrying client in between — against a real SDK agent limited by
 * `createLimiter`, on every binding: `JsonRpcTransportError` (`data` = our details, HTTP 200), the
 * REST error (429 / 503 with the answer's headers; the SDK drops the body's details) and
 * `GrpcA2AErrorImpl` (`statusDetailsBin`, the grpc-js error on `cause`).
 */

import type { Policy } from 'a2a-ratelimit';
import {
  isAgentOverloadedError,
  isRateLimitedError,
  isRetryBudgetExceededError,
  retryErrorOf,
} from 'a2a-ratelimit/client';
import { afterEach, describe, expect, it } from 'vitest';
import { as, startAgent, type TestAgent, userMessage } from './server-agent.helpers.js';

const perCaller: Policy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage'],
  limit: 60,
  windowSeconds: 60,
  burst: 2,
};
const agentGuard: Policy = {
  name: 'get-task-guard',
  kind: 'rate',
  scope: 'agent',
  methods: ['GetTask'],
  limit: 30,
  windowSeconds: 60,
  burst: 1,
  rejectAs: 'overload',
};

const BINDINGS = [
  ['JSONRPC', 'JsonRpcTransportError'],
  ['HTTP+JSON', 'A2AError'],
  ['GRPC', 'A2AError'],
] as const;

let agent: TestAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

describe.each(BINDINGS)("the SDK's own %s client error", (binding, errorName) => {
  it('is recognised as our quota or overload refusal, with the delay and the policy', async () => {
    agent = await startAgent({ policies: [perCaller, agentGuard] });
    const client = await agent.client(binding);
    const caller = as('sdk-caller');
    for (const id of ['a', 'b'])
      await client.sendMessage({ message: userMessage(id) } as never, caller);
    const quota = await client
      .sendMessage({ message: userMessage('c') } as never, caller)
      .catch((e: unknown) => e);
    expect((quota as Error).name).toBe(errorName);
    expect(isRateLimitedError(quota)).toBe(true);
    expect(isAgentOverloadedError(quota)).toBe(false);
    expect(isRetryBudgetExceededError(quota)).toBe(false);
    if (!isRateLimitedError(quota)) return;
    expect(quota.hint).toMatchObject({ kind: 'quota', delayMs: 1_000, policy: 'per-caller' });
    expect(quota.attempts).toBe(1);
    expect(retryErrorOf(quota)?.hint.delayMs).toBe(1_000);

    // The first GetTask is admitted (unknown task: not a limit); the second is refused as overload.
    const notFound = await client.getTask({ id: 'none' } as never, caller).catch((e: unknown) => e);
    expect(isRateLimitedError(notFound) || isAgentOverloadedError(notFound)).toBe(false);
    expect(retryErrorOf(notFound)).toBeUndefined();
    const overload = await client.getTask({ id: 'none' } as never, caller).catch((e: unknown) => e);
    expect(isAgentOverloadedError(overload)).toBe(true);
    expect(isRateLimitedError(overload)).toBe(false);
    if (!isAgentOverloadedError(overload)) return;
    expect(overload.hint).toMatchObject({
      kind: 'overload',
      delayMs: 2_000,
      policy: 'get-task-guard',
    });
    expect(agent.executions.get('c')).toBeUndefined(); // refused: nothing ran
  });
});
