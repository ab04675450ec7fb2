/**
 * Attack: usage reported for a task lands on the budget of whichever caller last sent a message
 * into that task id, even when the executor passes its own `RequestContext` (whose open admission
 * names the caller that started it). Task ids are not secret to whoever shares them, and the SDK
 * lets any caller send a message with an existing `taskId`.
 */

import type { Policy } from 'a2a-ratelimit';
import type { EventBusManagerLike } from 'a2a-ratelimit/server';
import { type AdmissionOutcome, createLimiter, TICKET_HEADER } from 'a2a-ratelimit/server';
import { ManualClock } from 'a2a-ratelimit/testing';
import { describe, expect, it } from 'vitest';

/** One task's event bus, as the bus manager hands it out. */
type EventBusLike = ReturnType<EventBusManagerLike['createOrGetByTaskId']>;

const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage'],
  limit: 10_000,
  windowSeconds: 60,
};

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

function contextOf(outcome: AdmissionOutcome): { state: Map<string, unknown> } {
  if (outcome.status !== 'admitted') throw new Error(`not admitted: ${outcome.status}`);
  const headers: Record<string, string> = {};
  if (outcome.ticket.needsEnd) headers[TICKET_HEADER] = outcome.ticket.id;
  return { state: new Map([['headers', headers]]) };
}

describe('attack: usageOf charges the last caller to touch a task id', () => {
  it("the executor's own RequestContext (alice's open admission) charges alice, not mallory who wrote into the task", async () => {
    const clock = new ManualClock(1_000_000);
    const limiter = createLimiter({
      policies: [TOKENS],
      clock,
      domain: 'agents.example.com',
      eventLoopDelay: false,
    });
    const manager = limiter.trackTasks(busManager());
    const alice = await limiter.admit({
      caller: 'alice',
      method: 'SendMessage',
      binding: 'rest',
      messageId: 'a1',
    });
    const aliceContext = contextOf(alice);
    manager.createOrGetByTaskId('task-1', aliceContext); // alice's executor starts
    // A follow-up message into the same task by another caller (the SDK does not check owners).
    const other = await limiter.admit({
      caller: 'mallory',
      method: 'SendMessage',
      binding: 'rest',
      messageId: 'm1',
    });
    manager.createOrGetByTaskId('task-1', contextOf(other));
    // mallory's run used nothing: its report gives back the budget its admission reserved.
    await limiter.usageOf({ taskId: 'task-1', context: contextOf(other) }).report(0);
    if (other.status === 'admitted') other.ticket.end();

    // alice's executor reports what alice's run used, with alice's RequestContext.
    const reporter = limiter.usageOf({ taskId: 'task-1', context: aliceContext });
    expect(reporter.request?.caller).toBe('alice');
    await reporter.report(10_000);
    if (alice.status === 'admitted') alice.ticket.end();
    // alice is spent (her report settled her own reservation, not mallory's); mallory's budget
    // is whole again.
    const next = await limiter.admit({
      caller: 'mallory',
      method: 'SendMessage',
      binding: 'rest',
      messageId: 'm2',
    });
    expect(next.status).toBe('admitted');
    await limiter.close();
  });
});

describe('attack: usage that is never charged (the identity is gone when the task reports)', () => {
  function setup() {
    const clock = new ManualClock(1_000_000);
    const limiter = createLimiter({
      // Each sybil starts 100 tasks before any reports: a small estimate lets them all run.
      policies: [{ ...TOKENS, estimate: 1 } as Policy],
      clock,
      domain: 'agents.example.com',
      eventLoopDelay: false,
      dedup: false,
    });
    const manager = limiter.trackTasks(busManager());
    /** A message whose task starts, after which the caller hangs up (a non-blocking send). */
    const start = async (caller: string, taskId: string) => {
      const outcome = await limiter.admit({ caller, method: 'SendMessage', binding: 'rest' });
      const context = contextOf(outcome);
      manager.createOrGetByTaskId(taskId, context);
      if (outcome.status === 'admitted') outcome.ticket.end();
      return { taskId, context };
    };
    return { clock, limiter, start };
  }

  it('a task still running after an hour reports with its RequestContext: charged to its caller', async () => {
    const { clock, limiter, start } = setup();
    const task = await start('alice', 'long-task');
    clock.advance(2 * 3_600_000); // the task works for two hours, no further message
    const charged = await limiter
      .usageOf(task)
      .report(10_000)
      .then(
        () => 'charged',
        (e: unknown) => String(e),
      );
    expect(charged).toBe('charged');
    await limiter.close();
  });

  it("100,000 other tasks started meanwhile do not erase a running task's caller", async () => {
    const { limiter, start } = setup();
    const task = await start('mallory', 'expensive');
    for (let i = 0; i < 100_000; i++) await start(`sybil-${i % 1000}`, `cheap-${i}`);
    const charged = await limiter
      .usageOf(task)
      .report(10_000)
      .then(
        () => 'charged',
        (e: unknown) => String(e),
      );
    expect(charged).toBe('charged');
    await limiter.close();
  });
});
