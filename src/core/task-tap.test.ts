import { describe, expect, it } from 'vitest';
import type { EventBusLike, EventBusManagerLike } from './task-events.js';
import { TappedBus, TaskTap, taskTapOf } from './task-tap.js';

function fakeBus(seen: unknown[]): EventBusLike {
  return {
    publish: (e: unknown) => seen.push(['sdk', e]),
    finished: () => seen.push(['sdk', 'finished']),
    on: () => undefined,
    off: () => undefined,
  };
}

function fakeManager(seen: unknown[]): EventBusManagerLike & { buses: Map<string, EventBusLike> } {
  const buses = new Map<string, EventBusLike>();
  return {
    buses,
    createOrGetByTaskId(taskId) {
      let bus = buses.get(taskId);
      if (bus === undefined) {
        bus = fakeBus(seen);
        buses.set(taskId, bus);
      }
      return bus;
    },
    getByTaskId: (taskId) => buses.get(taskId),
    cleanupByTaskId: (taskId) => {
      buses.delete(taskId);
    },
  };
}

describe('TaskTap', () => {
  it('wraps a manager once: a second subscriber joins the tap', () => {
    const inner = fakeManager([]);
    const tap = taskTapOf(inner);
    expect(tap).toBeInstanceOf(TaskTap);
    expect(taskTapOf(tap)).toBe(tap);
  });

  it('shows events to every watcher, in subscription order, before the SDK; one tapped bus per SDK bus', () => {
    const seen: unknown[] = [];
    const inner = fakeManager(seen);
    const tap = taskTapOf(inner);
    for (const name of ['a', 'b']) {
      tap.subscribe({
        open: () => (bus) => bus().watch({ event: (e) => seen.push([name, e]) }),
      });
    }
    const bus = tap.createOrGetByTaskId('t1');
    expect(bus).toBeInstanceOf(TappedBus);
    expect(tap.getByTaskId('t1')).toBe(bus);
    bus.publish(1);
    expect(seen).toEqual([
      ['a', 1],
      ['b', 1],
      ['sdk', 1],
    ]);
    tap.cleanupByTaskId('t1');
    expect(tap.getByTaskId('t1')).toBeUndefined();
  });

  it('hands out the SDK bus itself when nobody watches; a refusal makes nothing', () => {
    const inner = fakeManager([]);
    const tap = taskTapOf(inner);
    const cleaned: string[] = [];
    tap.subscribe({ cleanedUp: (taskId) => cleaned.push(taskId) });
    expect(tap.createOrGetByTaskId('plain')).toBe(inner.buses.get('plain'));
    tap.cleanupByTaskId('plain');
    expect(cleaned).toEqual(['plain']);
    tap.subscribe({
      open: () => {
        throw new Error('refused');
      },
    });
    expect(() => tap.createOrGetByTaskId('no')).toThrow('refused');
    expect(inner.buses.has('no')).toBe(false);
  });

  it('settleByTaskId declines unless the inner manager takes the bus, and tells the subscribers', () => {
    const inner = fakeManager([]);
    const tap = taskTapOf(inner);
    const settled: string[] = [];
    tap.subscribe({ settled: (taskId) => settled.push(taskId) });
    expect(tap.settleByTaskId('t1')).toBe(false);
    const taking = Object.assign(fakeManager([]), { settleByTaskId: () => true });
    expect(taskTapOf(taking).settleByTaskId('t2')).toBe(true);
    expect(settled).toEqual(['t1']);
  });
});
