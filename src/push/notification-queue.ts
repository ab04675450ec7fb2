/**
 * @module notification-queue
 * `NotificationQueue`: one webhook's queue — a lane per task, coalescing, what may be dropped for
 * room. Pure bookkeeping.
 */

import type { PushDropReason, PushPayloadKind } from './push-drops.js';

/**
 * One notification as the queue sees it. `payload` is whatever the sender needs to deliver it.
 *
 * @example
 * ```ts
 * const n: QueuedNotification<string> = {
 *   lane: 'cfg-1/task-1', taskId: 'task-1', kind: 'statusUpdate', state: 2, terminal: false,
 *   acceptedAtMs: 0, deadlineMs: 300_000, payload: '{"statusUpdate":{…}}',
 * };
 * ```
 */
export interface QueuedNotification<P> {
  /** The lane: one per (push config, task); order is kept within a lane. */
  readonly lane: string;
  readonly taskId: string;
  readonly kind: PushPayloadKind;
  /** `TaskState` number carried by a task snapshot or status update. */
  readonly state?: number | undefined;
  /** It carries a terminal task state (never coalesced away, never dropped for room). */
  readonly terminal: boolean;
  /** When the sender accepted it, ms. */
  readonly acceptedAtMs: number;
  /** Dropped when not delivered by then, ms. */
  readonly deadlineMs: number;
  readonly payload: P;
}

/**
 * A notification the queue let go of, and why.
 *
 * @example
 * ```ts
 * for (const { notification, reason } of queue.enqueue(n, nowMs)) report(notification, reason);
 * ```
 */
export interface QueueDrop<P> {
  readonly notification: QueuedNotification<P>;
  readonly reason: Extract<PushDropReason, 'coalesced' | 'queue-full' | 'deadline' | 'closed'>;
}

interface Entry<P> {
  notification: QueuedNotification<P>;
  /** Order of arrival in the queue (kept by a coalescing replacement). */
  readonly seq: number;
}

interface Lane<P> {
  readonly items: Entry<P>[];
  /** One of its notifications is being delivered. */
  busy: boolean;
}

/**
 * The queue of one webhook: one lane per (push config, task) that keeps the task's order and
 * delivers one notification at a time; status updates queued back to back in a lane are coalesced
 * (the latest state wins); past `maxQueued`, the oldest queued non-terminal status updates are
 * dropped first, then non-terminal task snapshots. Terminal states, artifact updates and messages
 * are never dropped to make room. Lanes take turns round-robin, so one busy task cannot starve the
 * others. No clock reads, no I/O: the sender owns time, delivery and reporting.
 *
 * @example
 * ```ts
 * const queue = new NotificationQueue<string>(1_000);
 * queue.enqueue(notification, clock.nowMs());
 * const next = queue.take();            // oldest lane's head; the lane is busy until…
 * if (next) queue.finish(next.lane);    // …its delivery ended
 * ```
 */
export class NotificationQueue<P> {
  /** Queued notifications at most (not counting those being delivered). */
  readonly maxQueued: number;
  private readonly lanes = new Map<string, Lane<P>>();
  /** Lanes with a queued head and nothing in delivery, in turn order. */
  private readonly ready = new Set<string>();
  private queuedCount = 0;
  private busyCount = 0;
  private seq = 0;

  constructor(maxQueued: number) {
    this.maxQueued = Math.max(1, Math.floor(maxQueued));
  }

  /** Notifications queued (not being delivered). */
  get size(): number {
    return this.queuedCount;
  }

  /** Notifications being delivered (one per busy lane). */
  get inDelivery(): number {
    return this.busyCount;
  }

  /** Nothing queued and nothing being delivered. */
  isIdle(): boolean {
    return this.queuedCount === 0 && this.busyCount === 0;
  }

  /**
   * Adds a notification and returns what it displaced: the status update it replaced (when the
   * lane's last queued notification is a non-terminal status update and this one is a status
   * update too), and — past `maxQueued` — expired notifications, then the oldest non-terminal
   * status updates, then the oldest non-terminal task snapshots. When nothing may be dropped
   * (only terminal states, artifacts and messages are queued) the queue grows past the bound.
   */
  enqueue(notification: QueuedNotification<P>, nowMs: number): QueueDrop<P>[] {
    const drops: QueueDrop<P>[] = [];
    let lane = this.lanes.get(notification.lane);
    if (lane === undefined) {
      lane = { items: [], busy: false };
      this.lanes.set(notification.lane, lane);
    }
    const last = lane.items.at(-1);
    if (
      last !== undefined &&
      notification.kind === 'statusUpdate' &&
      last.notification.kind === 'statusUpdate' &&
      !last.notification.terminal
    ) {
      // The latest state wins; it keeps the replaced one's place in line.
      drops.push({ notification: last.notification, reason: 'coalesced' });
      last.notification = notification;
      return drops;
    }
    lane.items.push({ notification, seq: this.seq++ });
    this.queuedCount++;
    if (!lane.busy) this.ready.add(notification.lane);
    if (this.queuedCount > this.maxQueued) this.makeRoom(nowMs, drops);
    return drops;
  }

  /**
   * The next notification to deliver: the head of the lane whose turn it is. Its lane is busy
   * (nothing else of it is handed out) until {@link NotificationQueue.finish}.
   */
  take(): QueuedNotification<P> | undefined {
    for (const key of this.ready) {
      this.ready.delete(key);
      const lane = this.lanes.get(key);
      const entry = lane?.items.shift();
      if (lane === undefined || entry === undefined) continue;
      lane.busy = true;
      this.queuedCount--;
      this.busyCount++;
      return entry.notification;
    }
    return undefined;
  }

  /** The delivery of a lane's notification ended (delivered or dropped): the lane may go again. */
  finish(laneKey: string): void {
    const lane = this.lanes.get(laneKey);
    if (lane === undefined || !lane.busy) return;
    lane.busy = false;
    this.busyCount--;
    if (lane.items.length > 0) this.ready.add(laneKey);
    else this.lanes.delete(laneKey);
  }

  /** Removes every queued notification (those being delivered stay busy until finished). */
  clear(): QueueDrop<P>[] {
    const drops: QueueDrop<P>[] = [];
    for (const [key, lane] of this.lanes) {
      for (const entry of lane.items.splice(0)) {
        drops.push({ notification: entry.notification, reason: 'closed' });
      }
      if (!lane.busy) this.lanes.delete(key);
    }
    this.ready.clear();
    this.queuedCount = 0;
    return drops;
  }

  private makeRoom(nowMs: number, drops: QueueDrop<P>[]): void {
    for (const [key, lane] of this.lanes) {
      for (let i = lane.items.length - 1; i >= 0; i--) {
        const entry = lane.items[i] as Entry<P>;
        if (entry.notification.deadlineMs > nowMs) continue;
        lane.items.splice(i, 1);
        this.queuedCount--;
        drops.push({ notification: entry.notification, reason: 'deadline' });
      }
      this.forgetIfEmpty(key, lane);
    }
    const tiers: ((n: QueuedNotification<P>) => boolean)[] = [
      (n) => n.kind === 'statusUpdate' && !n.terminal,
      (n) => n.kind === 'task' && !n.terminal,
    ];
    for (const droppable of tiers) {
      while (this.queuedCount > this.maxQueued) {
        const oldest = this.oldest(droppable);
        if (oldest === undefined) break;
        const [key, lane, index] = oldest;
        const [entry] = lane.items.splice(index, 1);
        this.queuedCount--;
        if (entry !== undefined)
          drops.push({ notification: entry.notification, reason: 'queue-full' });
        this.forgetIfEmpty(key, lane);
      }
    }
  }

  private oldest(
    droppable: (n: QueuedNotification<P>) => boolean,
  ): [string, Lane<P>, number] | undefined {
    let found: [string, Lane<P>, number] | undefined;
    let foundSeq = Number.POSITIVE_INFINITY;
    for (const [key, lane] of this.lanes) {
      const index = lane.items.findIndex((e) => droppable(e.notification));
      const entry = lane.items[index];
      if (entry !== undefined && entry.seq < foundSeq) {
        found = [key, lane, index];
        foundSeq = entry.seq;
      }
    }
    return found;
  }

  private forgetIfEmpty(key: string, lane: Lane<P>): void {
    if (lane.items.length > 0) return;
    this.ready.delete(key);
    if (!lane.busy) this.lanes.delete(key);
  }
}
