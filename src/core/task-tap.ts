/**
 * @module task-tap
 * `TaskTap`: the one wrapper around the SDK's `ExecutionEventBusManager`, which task watchers
 * subscribe to.
 */

import type { EventBusLike, EventBusManagerLike } from './task-events.js';

/**
 * What a subscriber watches on one tapped bus: each event published (before the SDK's listeners
 * see it) and the end of the execution flow.
 */
export interface TaskWatcher {
  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  event?(event: any): void;
  finished?(): void;
}

/**
 * One subscriber of a {@link TaskTap}.
 */
export interface TaskTapSubscriber {
  /**
   * The SDK asks for task `taskId`'s bus (a run is about to start). Called before the bus is made;
   * may throw, and then nothing is made. Returns what to do once it is made (given `tap`, which
   * hands out the tapped bus, made on first use), or undefined.
   */
  open?(taskId: string, context: unknown): ((tap: () => TappedBus) => void) | undefined;
  /** The SDK cleaned task `taskId`'s bus up (after the inner manager did). */
  cleanedUp?(taskId: string, context: unknown): void;
  /** The SDK offered task `taskId`'s bus to `settleByTaskId` (its executor returned). */
  settled?(taskId: string): void;
}

/**
 * The SDK's bus of one task, every call passed through; each event published and the end of the
 * flow shown to the watchers first, in the order they started watching.
 */
export class TappedBus implements EventBusLike {
  private readonly watchers: TaskWatcher[] = [];

  constructor(
    /** The SDK's bus. */
    readonly inner: EventBusLike,
  ) {}

  /** Shows this bus's events and end to `watcher` from now on (until the bus is cleaned up). */
  watch(watcher: TaskWatcher): void {
    this.watchers.push(watcher);
  }

  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  publish(event: any): void {
    for (const w of this.watchers) w.event?.(event);
    this.inner.publish(event);
  }

  finished(): void {
    for (const w of this.watchers) w.finished?.();
    this.inner.finished();
  }

  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  on(eventName: 'event' | 'finished', listener: (event: any) => void): this {
    this.inner.on(eventName, listener);
    return this;
  }

  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  off(eventName: 'event' | 'finished', listener: (event: any) => void): this {
    this.inner.off(eventName, listener);
    return this;
  }

  // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
  once(eventName: 'event' | 'finished', listener: (event: any) => void): this {
    if (this.inner.once !== undefined) this.inner.once(eventName, listener);
    else {
      // biome-ignore lint/suspicious/noExplicitAny: see EventBusLike
      const wrapped = (event: any) => {
        this.inner.off(eventName, wrapped);
        listener(event);
      };
      this.inner.on(eventName, wrapped);
    }
    return this;
  }

  removeAllListeners(eventName?: 'event' | 'finished'): this {
    this.inner.removeAllListeners?.(eventName);
    return this;
  }
}

/** Marks a tap, so a second subscriber joins it rather than wrapping it again. */
const TAP = Symbol.for('a2a-ratelimit.task-tap');

/**
 * The wrapper of one SDK bus manager: same behaviour; a bus some subscriber watches is handed out
 * tapped (the same {@link TappedBus} while the SDK keeps the same bus), any other as it is.
 * `settleByTaskId` is always there (declining, as a manager without one does, unless the inner
 * manager takes the bus).
 */
export class TaskTap implements EventBusManagerLike {
  readonly [TAP] = true;
  private readonly subscribers: TaskTapSubscriber[] = [];
  /** Tapped buses by task id, until the SDK cleans the task's bus up. */
  private readonly buses = new Map<string, TappedBus>();

  constructor(readonly inner: EventBusManagerLike) {}

  /** Adds `subscriber` (after those already there). */
  subscribe(subscriber: TaskTapSubscriber): void {
    this.subscribers.push(subscriber);
  }

  createOrGetByTaskId(taskId: string, context?: unknown): EventBusLike {
    // Every subscriber may refuse first (nothing is made then); their follow-ups run after.
    let first: ((tap: () => TappedBus) => void) | undefined;
    let rest: ((tap: () => TappedBus) => void)[] | undefined;
    for (const s of this.subscribers) {
      const then = s.open?.(taskId, context);
      if (then === undefined) continue;
      if (first === undefined) first = then;
      else if (rest === undefined) rest = [then];
      else rest.push(then);
    }
    const bus = this.inner.createOrGetByTaskId(taskId, context);
    let tapped = this.buses.size === 0 ? undefined : this.buses.get(taskId);
    if (tapped !== undefined && tapped.inner !== bus) {
      this.buses.delete(taskId);
      tapped = undefined;
    }
    if (first === undefined) return tapped ?? bus;
    const tap = (): TappedBus => {
      if (tapped === undefined) {
        tapped = new TappedBus(bus);
        this.buses.set(taskId, tapped);
      }
      return tapped;
    };
    first(tap);
    if (rest !== undefined) for (const then of rest) then(tap);
    return tapped ?? bus;
  }

  getByTaskId(taskId: string, context?: unknown): EventBusLike | undefined {
    const bus = this.inner.getByTaskId(taskId, context);
    const tapped = bus === undefined || this.buses.size === 0 ? undefined : this.buses.get(taskId);
    return tapped !== undefined && tapped.inner === bus ? tapped : bus;
  }

  cleanupByTaskId(taskId: string, context?: unknown): void {
    this.inner.cleanupByTaskId(taskId, context);
    this.buses.delete(taskId);
    for (const s of this.subscribers) s.cleanedUp?.(taskId, context);
  }

  settleByTaskId(...args: unknown[]): boolean {
    const settle = (this.inner as { settleByTaskId?: (...a: unknown[]) => boolean }).settleByTaskId;
    const took = typeof settle === 'function' ? settle.apply(this.inner, args) : false;
    const taskId = args[0];
    if (typeof taskId === 'string') for (const s of this.subscribers) s.settled?.(taskId);
    return took;
  }
}

/**
 * `manager` itself when it is a {@link TaskTap} (of this or another install), else a new tap
 * around it.
 */
export function taskTapOf(manager: EventBusManagerLike): TaskTap {
  return (manager as Partial<Record<typeof TAP, unknown>>)[TAP] === true
    ? (manager as TaskTap)
    : new TaskTap(manager);
}
