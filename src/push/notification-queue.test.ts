import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NotificationQueue, type QueuedNotification } from './notification-queue.js';
import type { PushPayloadKind } from './push-drops.js';

const WORKING = 2;
const COMPLETED = 3;

function note(
  task: string,
  kind: PushPayloadKind,
  payload: string,
  extra: Partial<QueuedNotification<string>> = {},
): QueuedNotification<string> {
  const state = extra.state ?? (kind === 'statusUpdate' || kind === 'task' ? WORKING : undefined);
  return {
    lane: `cfg/${task}`,
    taskId: task,
    kind,
    state,
    terminal: state === COMPLETED,
    acceptedAtMs: 0,
    deadlineMs: 1_000,
    payload,
    ...extra,
  };
}

/** Takes and finishes everything, returning payloads in delivery order. */
function deliverAll(queue: NotificationQueue<string>): string[] {
  const out: string[] = [];
  for (let n = queue.take(); n !== undefined; n = queue.take()) {
    out.push(n.payload);
    queue.finish(n.lane);
  }
  return out;
}

describe('NotificationQueue', () => {
  it('coalesces back-to-back status updates of a lane: the latest wins, its place kept', () => {
    const queue = new NotificationQueue<string>(100);
    queue.enqueue(note('a', 'statusUpdate', 'a1'), 0);
    queue.enqueue(note('b', 'statusUpdate', 'b1'), 0);
    const drops = queue.enqueue(note('a', 'statusUpdate', 'a2'), 0);
    expect(drops.map((d) => [d.notification.payload, d.reason])).toEqual([['a1', 'coalesced']]);
    expect(queue.size).toBe(2);
    expect(deliverAll(queue)).toEqual(['a2', 'b1']);
  });

  it('never coalesces across an artifact update, and never replaces a terminal state', () => {
    const queue = new NotificationQueue<string>(100);
    queue.enqueue(note('a', 'statusUpdate', 's1'), 0);
    queue.enqueue(note('a', 'artifactUpdate', 'art'), 0);
    queue.enqueue(note('a', 'statusUpdate', 's2'), 0);
    queue.enqueue(note('a', 'statusUpdate', 'done', { state: COMPLETED }), 0);
    const late = queue.enqueue(note('a', 'statusUpdate', 'after'), 0);
    expect(late).toEqual([]);
    expect(deliverAll(queue)).toEqual(['s1', 'art', 'done', 'after']);
  });

  it('keeps one delivery per lane at a time and takes lanes in turn', () => {
    const queue = new NotificationQueue<string>(100);
    queue.enqueue(note('a', 'artifactUpdate', 'a1'), 0);
    queue.enqueue(note('a', 'artifactUpdate', 'a2'), 0);
    queue.enqueue(note('b', 'artifactUpdate', 'b1'), 0);
    const first = queue.take();
    const second = queue.take();
    expect([first?.payload, second?.payload]).toEqual(['a1', 'b1']);
    expect(queue.take()).toBeUndefined(); // a2 waits for a1
    // A status update arriving while a lane's head is in delivery is not coalesced into it.
    queue.finish('cfg/a');
    expect(queue.take()?.payload).toBe('a2');
  });

  it('past the bound drops the oldest non-terminal status updates first, then task snapshots', () => {
    const queue = new NotificationQueue<string>(3);
    queue.enqueue(note('a', 'task', 'snap-a'), 0);
    queue.enqueue(note('a', 'artifactUpdate', 'art-a'), 0);
    queue.enqueue(note('b', 'statusUpdate', 'st-b'), 0);
    const d1 = queue.enqueue(note('c', 'statusUpdate', 'st-c'), 0);
    expect(d1.map((d) => [d.notification.payload, d.reason])).toEqual([['st-b', 'queue-full']]);
    const d2 = queue.enqueue(note('d', 'artifactUpdate', 'art-d'), 0);
    expect(d2.map((d) => d.notification.payload)).toEqual(['st-c']);
    const d3 = queue.enqueue(note('e', 'statusUpdate', 'done-e', { state: COMPLETED }), 0);
    expect(d3.map((d) => d.notification.payload)).toEqual(['snap-a']);
    // Only artifacts and terminal states left: nothing may go, the queue grows past the bound.
    const d4 = queue.enqueue(note('f', 'artifactUpdate', 'art-f'), 0);
    expect(d4).toEqual([]);
    expect(queue.size).toBe(4);
    expect(deliverAll(queue).sort()).toEqual(['art-a', 'art-d', 'art-f', 'done-e']);
  });

  it('past the bound drops expired notifications before anything else', () => {
    const queue = new NotificationQueue<string>(2);
    queue.enqueue(note('a', 'statusUpdate', 'fresh'), 0);
    queue.enqueue(note('b', 'artifactUpdate', 'stale', { deadlineMs: 10 }), 0);
    const drops = queue.enqueue(note('c', 'statusUpdate', 'new'), 50);
    expect(drops.map((d) => [d.notification.payload, d.reason])).toEqual([['stale', 'deadline']]);
    expect(deliverAll(queue)).toEqual(['fresh', 'new']);
  });

  it('clear() hands back everything queued as closed; a lane in delivery finishes normally', () => {
    const queue = new NotificationQueue<string>(10);
    queue.enqueue(note('a', 'statusUpdate', 'a1'), 0);
    queue.enqueue(note('a', 'artifactUpdate', 'a2'), 0);
    const inDelivery = queue.take();
    const drops = queue.clear();
    expect(drops.map((d) => [d.notification.payload, d.reason])).toEqual([['a2', 'closed']]);
    expect(queue.isIdle()).toBe(false);
    queue.finish(inDelivery?.lane ?? '');
    expect(queue.isIdle()).toBe(true);
  });

  it('property: lane order kept, terminal states and artifacts always delivered, the rest delivered or reported', () => {
    const event = fc.record({
      task: fc.integer({ min: 0, max: 4 }),
      kind: fc.constantFrom<PushPayloadKind>('statusUpdate', 'statusUpdate', 'artifactUpdate'),
      terminal: fc.boolean(),
      takeAfter: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 80 }),
        fc.integer({ min: 1, max: 6 }),
        (events, max) => {
          const queue = new NotificationQueue<string>(max);
          const delivered: string[] = [];
          const dropped = new Set<string>();
          const sent = new Map<number, string[]>();
          const inDelivery: string[] = [];
          events.forEach((e, i) => {
            const terminal = e.kind === 'statusUpdate' && e.terminal;
            const payload = `${e.task}:${i}:${e.kind}:${terminal ? 'T' : ''}`;
            sent.set(e.task, [...(sent.get(e.task) ?? []), payload]);
            const drops = queue.enqueue(
              note(String(e.task), e.kind, payload, { state: terminal ? COMPLETED : WORKING }),
              0,
            );
            for (const d of drops) dropped.add(d.notification.payload);
            if (e.takeAfter) {
              const n = queue.take();
              if (n !== undefined) inDelivery.push(n.payload);
              const done = inDelivery.shift();
              if (done !== undefined) {
                delivered.push(done);
                queue.finish(`cfg/${done.split(':')[0]}`);
              }
            }
          });
          for (const p of inDelivery) {
            delivered.push(p);
            queue.finish(`cfg/${p.split(':')[0]}`);
          }
          delivered.push(...deliverAll(queue));
          for (const [task, payloads] of sent) {
            const got = delivered.filter((p) => p.startsWith(`${task}:`));
            // Delivered ones keep emission order.
            expect(got).toEqual(payloads.filter((p) => got.includes(p)));
            // Artifacts and terminal states are never dropped.
            for (const p of payloads) {
              if (p.includes('artifactUpdate') || p.endsWith('T')) expect(got).toContain(p);
              else expect(got.includes(p) || dropped.has(p)).toBe(true);
            }
          }
          return queue.isIdle();
        },
      ),
    );
  });
});
