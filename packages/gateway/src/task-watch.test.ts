import type { Policy } from 'a2a-ratelimit';
import { type AdmissionTicket, createLimiter, type Limiter } from 'a2a-ratelimit/server';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskWatch, type WatchScope } from './task-watch.js';

/** Past the limiter's task usage TTL (one hour after a task's bus is cleaned up). */
const PAST_USAGE_TTL_MS = 2 * 3_600_000;

const WORKING = 2;
const COMPLETED = 3;
const INPUT_REQUIRED = 6;

const tasks: Policy = {
  name: 'tasks',
  kind: 'concurrency',
  scope: 'caller',
  methods: ['SendMessage'],
  max: 100,
};

let limiter: Limiter | undefined;
afterEach(async () => {
  await limiter?.close();
  limiter = undefined;
});

function setUp(): { limiter: Limiter; watch: TaskWatch; clock: { t: number } } {
  const clock = { t: 1_000_000 };
  limiter = createLimiter({
    policies: [tasks],
    clock: { nowMs: () => clock.t },
    domain: 'agents.example.com',
    eventLoopDelay: false,
    // Interrupted tasks keep their leases: only the watch's cleanup can free them.
    leases: { releaseOnInterrupted: false },
  });
  return { limiter, watch: new TaskWatch(limiter), clock };
}

let n = 0;
async function admitted(limiter: Limiter): Promise<{ ticket: AdmissionTicket; scope: WatchScope }> {
  const outcome = await limiter.admit({
    caller: 'alice',
    method: 'SendMessage',
    binding: 'jsonrpc',
    messageId: `m${++n}`,
  });
  if (outcome.status !== 'admitted') throw new Error(`not admitted: ${outcome.status}`);
  const ticket = outcome.ticket;
  return { ticket, scope: { ticketId: ticket.id, tenant: undefined, caller: 'alice' } };
}

describe('TaskWatch cleans up through the limiter', () => {
  it('tasks that complete leave nothing kept for good: their usage identities expire', async () => {
    const { limiter, watch, clock } = setUp();
    const start = { tracked: limiter.tasksTracked(), leases: limiter.leasesHeld() };
    const ids = ['t1', 't2', 't3'];
    for (const id of ids) {
      const { ticket, scope } = await admitted(limiter);
      expect(watch.task(scope, id, WORKING)).toBe(true);
      ticket.end();
    }
    expect(limiter.tasksTracked()).toBe(start.tracked + 3);
    expect(limiter.leasesHeld()).toBe(start.leases + 3);
    // The usage identity is kept while a task runs, whatever the clock says.
    clock.t += PAST_USAGE_TTL_MS;
    for (const id of ids) expect(limiter.usageOf(id).request?.caller).toBe('alice');
    for (const id of ids) expect(watch.task(undefined, id, COMPLETED)).toBe(false);
    expect(watch.size()).toBe(0);
    expect({ tracked: limiter.tasksTracked(), leases: limiter.leasesHeld() }).toEqual(start);
    // Kept for usage reported late, then forgotten: nothing per task stays for good.
    expect(limiter.usageOf('t1').request?.caller).toBe('alice');
    clock.t += PAST_USAGE_TTL_MS;
    for (const id of ids) expect(limiter.usageOf(id).request).toBeUndefined();
  });

  it('a task given up while waiting on its caller frees its leases and its tracking', async () => {
    const { limiter, watch } = setUp();
    const start = { tracked: limiter.tasksTracked(), leases: limiter.leasesHeld() };
    const { ticket, scope } = await admitted(limiter);
    expect(watch.task(scope, 'waiting', INPUT_REQUIRED)).toBe(true);
    ticket.end();
    expect(limiter.tasksTracked()).toBe(start.tracked + 1);
    // The follower's polls ran out: the task is given up.
    watch.finish('waiting');
    expect(watch.watching('waiting')).toBe(false);
    expect({ tracked: limiter.tasksTracked(), leases: limiter.leasesHeld() }).toEqual(start);
  });

  it('an admission answered with a Message leaves no identity kept for good', async () => {
    const { limiter, watch, clock } = setUp();
    const { ticket, scope } = await admitted(limiter);
    watch.message(scope, { messageId: 'reply', role: 'ROLE_AGENT', parts: [] });
    ticket.end();
    expect(limiter.tasksTracked()).toBe(0);
    expect(limiter.leasesHeld()).toBe(0);
    clock.t += PAST_USAGE_TTL_MS;
    expect(limiter.usageOf(`message:${ticket.id}`).request).toBeUndefined();
  });
});
