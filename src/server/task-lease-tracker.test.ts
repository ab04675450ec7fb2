import { describe, expect, it } from 'vitest';
import type { LeaseRef } from '../core/rejection.js';
import {
  type EventBusLike,
  type EventBusManagerLike,
  TaskLeaseTracker,
} from './task-lease-tracker.js';

/** A bus as the SDK's behaves: listeners per event name, publish and finished call them. */
class FakeBus implements EventBusLike {
  readonly listeners: Record<'event' | 'finished', ((e?: unknown) => void)[]> = {
    event: [],
    finished: [],
  };
  publish(event: unknown): void {
    for (const l of this.listeners.event) l(event);
  }
  finished(): void {
    for (const l of this.listeners.finished) l();
  }
  on(name: 'event' | 'finished', listener: (e?: unknown) => void): this {
    this.listeners[name].push(listener);
    return this;
  }
  off(name: 'event' | 'finished', listener: (e?: unknown) => void): this {
    this.listeners[name] = this.listeners[name].filter((l) => l !== listener);
    return this;
  }
}

class FakeManager implements EventBusManagerLike {
  readonly buses = new Map<string, FakeBus>();
  createOrGetByTaskId(taskId: string, _context?: unknown): FakeBus {
    let bus = this.buses.get(taskId);
    if (bus === undefined) {
      bus = new FakeBus();
      this.buses.set(taskId, bus);
    }
    return bus;
  }
  getByTaskId(taskId: string, _context?: unknown): FakeBus | undefined {
    return this.buses.get(taskId);
  }
  cleanupByTaskId(taskId: string, _context?: unknown): void {
    this.buses.delete(taskId);
  }
}

function ticket(leases: LeaseRef[]) {
  const settled: (string | undefined)[] = [];
  return {
    settled,
    bound: false,
    takeTaskLeases() {
      this.bound = true;
      return leases;
    },
    settleDedup(taskId: string | undefined) {
      settled.push(taskId);
    },
  };
}

const lease = (id: string): LeaseRef => ({ policyIndex: 0, key: 'caller:a', leaseId: id });
const contextWith = (ticketId: string | undefined) => ({
  state: new Map([['headers', ticketId === undefined ? {} : { 'x-ticket': ticketId }]]),
});
const status = (state: number) => ({ kind: 'statusUpdate', data: { status: { state } } });

function setup() {
  const released: LeaseRef[] = [];
  const tickets = new Map<string, ReturnType<typeof ticket>>();
  const tracker = new TaskLeaseTracker(
    {
      releaseOnInterrupted: true,
      release: (l) => released.push(...l),
      ticketOf: (id) => tickets.get(id),
      nowMs: () => 0,
    },
    'x-ticket',
  );
  const inner = new FakeManager();
  return { released, tickets, tracker, inner, manager: tracker.wrap(inner) };
}

describe('TaskLeaseTracker', () => {
  it('passes events through, settles deduplication on the first one, releases on a terminal state', () => {
    const { released, tickets, tracker, inner, manager } = setup();
    const t = ticket([lease('l1')]);
    tickets.set('t1', t);
    const bus = manager.createOrGetByTaskId('task-1', contextWith('t1'));
    const seen: unknown[] = [];
    bus.on('event', (e) => seen.push(e));
    expect(tracker.size()).toBe(1);
    bus.publish(status(2)); // WORKING
    expect(t.settled).toEqual(['task-1']);
    expect(seen).toHaveLength(1);
    expect(inner.buses.get('task-1')?.listeners.event).toHaveLength(1);
    expect(released).toEqual([]);
    bus.publish(status(3)); // COMPLETED
    expect(released).toEqual([lease('l1')]);
    expect(tracker.size()).toBe(0);
    expect(seen).toHaveLength(2);
  });

  it('a message reply settles without a task; finishing with no event settles without one too', () => {
    const { tickets, manager } = setup();
    const a = ticket([]);
    const b = ticket([]);
    tickets.set('a', a);
    tickets.set('b', b);
    manager.createOrGetByTaskId('task-a', contextWith('a')).publish({ kind: 'message', data: {} });
    manager.createOrGetByTaskId('task-b', contextWith('b')).finished();
    expect(a.settled).toEqual([undefined]);
    expect(b.settled).toEqual([undefined]);
  });

  it('watches a task holding leases whoever drives it: a request with no ticket, or getByTaskId', () => {
    const { released, tickets, tracker, manager } = setup();
    tickets.set('t1', ticket([lease('l1')]));
    manager.createOrGetByTaskId('task-1', contextWith('t1'));
    // A follow-up with no ticket takes the task to INPUT_REQUIRED: the lease is released.
    manager.createOrGetByTaskId('task-1', contextWith(undefined)).publish(status(6));
    expect(released).toEqual([lease('l1')]);
    // Canceling through getByTaskId is seen as well.
    tickets.set('t2', ticket([lease('l2')]));
    manager.createOrGetByTaskId('task-2', contextWith('t2'));
    manager.getByTaskId('task-2')?.publish(status(5)); // CANCELED
    expect(released).toEqual([lease('l1'), lease('l2')]);
    expect(tracker.size()).toBe(0);
  });

  it('hands out the SDK bus itself when there is nothing to track, and cleanup releases', () => {
    const { released, tickets, inner, manager } = setup();
    expect(manager.createOrGetByTaskId('plain', contextWith(undefined))).toBe(
      inner.buses.get('plain'),
    );
    tickets.set('t3', ticket([lease('l3')]));
    manager.createOrGetByTaskId('task-3', contextWith('t3'));
    manager.cleanupByTaskId('task-3');
    expect(released).toEqual([lease('l3')]);
  });
});
