/**
 * Task-bound usage reporting (`limiter.usageOf(task)`): the identity admitted for a task is
 * captured when the SDK asks for the task's event bus, so usage reported after the task ended,
 * after its caller went away, or from outside the executor charges that caller's budget (into
 * debt), and the next admission waits exactly until the budget is positive again.
 */

import type { Policy } from 'a2a-ratelimit';
import type { EventBusManagerLike } from 'a2a-ratelimit/server';
import {
  type AdmissionOutcome,
  createLimiter,
  type Limiter,
  TICKET_HEADER,
  UnknownTaskUsageError,
} from 'a2a-ratelimit/server';
import { ManualClock } from 'a2a-ratelimit/testing';
import { describe, expect, it } from 'vitest';

/** One task's event bus, as the bus manager hands it out. */
type EventBusLike = ReturnType<EventBusManagerLike['createOrGetByTaskId']>;

/** How long the limiter remembers a task's identity for usage reports (one hour). */
const TASK_USAGE_TTL_MS = 3_600_000;

const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage'],
  limit: 10_000,
  windowSeconds: 60,
  // Three tasks run before any reports: each reserves one token, and its report settles it.
  estimate: 1,
};

/** The SDK's bus manager, as far as the limiter calls it. */
function busManager(): EventBusManagerLike {
  const buses = new Map<string, EventBusLike>();
  const bus = (): EventBusLike => ({
    publish: () => undefined,
    finished: () => undefined,
    on: () => undefined,
    off: () => undefined,
  });
  return {
    createOrGetByTaskId: (taskId) => {
      const b = buses.get(taskId) ?? bus();
      buses.set(taskId, b);
      return b;
    },
    getByTaskId: (taskId) => buses.get(taskId),
    cleanupByTaskId: (taskId) => void buses.delete(taskId),
  };
}

/** A `ServerCallContext` as the adapters leave it: the ticket id in `state.get('headers')`. */
function contextOf(outcome: AdmissionOutcome): { state: Map<string, unknown> } {
  if (outcome.status !== 'admitted') throw new Error(`not admitted: ${outcome.status}`);
  const headers: Record<string, string> = {};
  if (outcome.ticket.needsEnd) headers[TICKET_HEADER] = outcome.ticket.id;
  return { state: new Map([['headers', headers]]) };
}

function setup(dedup: boolean) {
  const clock = new ManualClock(1_000_000);
  const limiter = createLimiter({
    policies: [TOKENS],
    clock,
    domain: 'agents.example.com',
    eventLoopDelay: false,
    ...(dedup ? {} : { dedup: false as const }),
  });
  const manager = limiter.trackTasks(busManager());
  const alice = { caller: 'alice', method: 'SendMessage' as const, binding: 'rest' as const };
  let n = 0;
  /**
   * One message: admitted, its task's bus created (the executor starts), the response ends, and
   * the task's run ends (the SDK cleans its bus up).
   */
  const runTask = async (taskId: string): Promise<void> => {
    const outcome = await limiter.admit({ ...alice, messageId: `m${++n}` });
    const context = contextOf(outcome);
    manager.createOrGetByTaskId(taskId, context);
    if (outcome.status === 'admitted') outcome.ticket.end(); // the caller is gone
    manager.cleanupByTaskId(taskId, context);
  };
  return { clock, limiter, manager, alice, runTask };
}

async function refusalMs(limiter: Limiter, request: Parameters<Limiter['admit']>[0]) {
  const outcome = await limiter.admit(request);
  return outcome.status === 'rejected' ? outcome.rejection.retryAfterMs : undefined;
}

describe.each([true, false])('limiter.usageOf (dedup %s)', (dedup) => {
  it('charges the admitted caller after the task ended and the caller left; debt refuses exactly', async () => {
    const { clock, limiter, alice, runTask } = setup(dedup);
    for (const taskId of ['task-1', 'task-2', 'task-3']) await runTask(taskId);
    // Reported later, from outside the executor, by task id only.
    for (const taskId of ['task-1', 'task-2', 'task-3']) {
      const reporter = limiter.usageOf(taskId);
      expect(reporter.request).toEqual({ caller: 'alice', method: 'SendMessage' });
      await reporter.report(4_000);
    }
    // 12,000 of 10,000: 2,000 in debt plus one token to spend, at 6 ms a token.
    expect(await refusalMs(limiter, { ...alice, messageId: 'm-late' })).toBe(12_006);
    clock.advance(12_006);
    expect((await limiter.admit({ ...alice, messageId: 'm-after' })).status).toBe('admitted');
    await limiter.close();
  });

  it("resolves from the executor's RequestContext while the admission is open", async () => {
    const { limiter, alice } = setup(dedup);
    const outcome = await limiter.admit({ ...alice, tenant: 'acme', messageId: 'm1' });
    const reporter = limiter.usageOf({ taskId: 'task-9', context: contextOf(outcome) });
    if (outcome.status === 'admitted') outcome.ticket.end();
    expect(reporter.request).toEqual({ caller: 'alice', method: 'SendMessage', tenant: 'acme' });
    await reporter.report(10_000);
    // Kept by task id from then on, and charged to alice's budget.
    expect(limiter.usageOf('task-9').request?.caller).toBe('alice');
    expect(await refusalMs(limiter, { ...alice, messageId: 'm2' })).toBe(6);
    await limiter.close();
  });

  it('a task it never admitted is refused with a stable code; identities expire, reporters keep theirs', async () => {
    const { clock, limiter, alice, runTask } = setup(dedup);
    const unknown = limiter.usageOf('no-such-task');
    expect(unknown.request).toBeUndefined();
    const error = await unknown.report(1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownTaskUsageError);
    expect((error as { code: string }).code).toBe('ERR_A2A_USAGE_UNKNOWN_TASK');

    await runTask('task-1');
    const early = limiter.usageOf('task-1');
    clock.advance(TASK_USAGE_TTL_MS + 1);
    expect(limiter.usageOf('task-1').request).toBeUndefined();
    await early.report(20_000); // resolved before the expiry: still charged
    expect(await refusalMs(limiter, { ...alice, messageId: 'm-x' })).toBeGreaterThan(0);
    await expect(early.report(-1)).rejects.toThrow('units must be a whole number');
    await limiter.close();
  });
});
