import { describe, expect, it } from 'vitest';
import type { RequestIdentity } from '../core/policy.js';
import { TASK_USAGE_TTL_MS, TaskUsageBook } from './task-usage.js';

function book(
  clock: { now: number },
  charged: [RequestIdentity, number][] = [],
  settled: [string, number, boolean][] = [],
) {
  return new TaskUsageBook({
    ticketHeader: 'x-ticket',
    admittedBy: () => undefined,
    charge: async (request, units, { settle }) => {
      charged.push([request, units]);
      settled.push([request.caller, units, settle]);
    },
    nowMs: () => clock.now,
  });
}

describe('TaskUsageBook: kept identities are shared, not copied per task', () => {
  it('1,000 tasks of one long-named caller keep one identity; it goes with the last task', async () => {
    const clock = { now: 1_000 };
    const charged: [RequestIdentity, number][] = [];
    const b = book(clock, charged);
    const name = 'x'.repeat(8192);
    for (let i = 0; i < 1000; i++) {
      // A fresh string per request, equal to the others.
      b.remember(
        `t${i}`,
        { caller: name.slice(0, 4096) + name.slice(4096), method: 'SendMessage' },
        { live: false },
      );
    }
    b.remember('other', { caller: 'short', method: 'SendMessage', tenant: 'a' }, { live: false });
    expect(b.size()).toBe(1001);
    expect(b.identityCount()).toBe(2);
    await b.reporterOf('t7').report(5);
    expect(charged).toEqual([[{ caller: name, method: 'SendMessage' }, 5]]);
    // Same caller, another tenant: an identity of its own.
    b.remember('t-tenant', { caller: name, method: 'SendMessage', tenant: 'b' }, { live: false });
    expect(b.identityCount()).toBe(3);
    // Past the TTL, the next remember drops the expired tasks and their shared identities.
    clock.now += TASK_USAGE_TTL_MS + 1;
    b.remember('late', { caller: 'late', method: 'SendMessage' }, { live: false });
    expect(b.size()).toBe(1);
    expect(b.identityCount()).toBe(1);
  });

  it('a task admitted again keeps one reference, whichever identity it has now', () => {
    const clock = { now: 0 };
    const b = book(clock);
    b.remember('t', { caller: 'a', method: 'SendMessage' });
    b.remember('t', { caller: 'a', method: 'SendMessage' });
    expect(b.identityCount()).toBe(1);
    b.remember('t', { caller: 'b', method: 'SendMessage' });
    expect(b.identityCount()).toBe(1);
    expect(b.reporterOf('t').request?.caller).toBe('b');
  });
});

describe("TaskUsageBook: a report settles its own admission's reservation once", () => {
  it('first report of each admission settles; later ones, and other callers, charge in full', async () => {
    const settled: [string, number, boolean][] = [];
    const b = book({ now: 0 }, [], settled);
    const alice = { caller: 'alice', method: 'SendMessage' } as const;
    const mallory = { caller: 'mallory', method: 'SendMessage' } as const;
    b.remember('t', alice, { ticketId: 'ticket-a' });
    b.remember('t', alice, { ticketId: 'ticket-a' }); // the SDK asking twice under one admission
    b.remember('t', mallory, { ticketId: 'ticket-m' }); // a follow-up by someone else
    await b.reporterOf('t').report(5); // the kept identity is mallory's now
    await b.reporterOf('t').report(6);
    b.remember('other', alice, { ticketId: 'ticket-x' });
    b.remember('t', alice, { ticketId: 'ticket-b' });
    expect(settled).toEqual([
      ['mallory', 5, true],
      ['mallory', 6, false],
    ]);
    settled.length = 0;
    await b.reporterOf('t').report(7); // alice: ticket-a's reservation
    await b.reporterOf('t').report(8); // alice: ticket-b's
    await b.reporterOf('t').report(9); // nothing left to settle
    expect(settled).toEqual([
      ['alice', 7, true],
      ['alice', 8, true],
      ['alice', 9, false],
    ]);
  });
});
