/**
 * @module task-follower
 * `TaskFollower`: polls the upstream's GetTask for a task left running after its answer, until it
 * ends or the polls run out.
 */

import type { Dispatcher } from 'undici';
import type { TaskWatch } from './task-watch.js';
import { getTask, type TaskQuery } from './upstream-client.js';

/** Options of {@link TaskFollower}. */
export interface TaskFollowerOptions {
  readonly dispatcher: Dispatcher;
  readonly watch: TaskWatch;
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxPolls: number;
  readonly timeoutMs: number;
}

/**
 * Polls tasks until they end: the upstream's GetTask with the admitting request's credentials,
 * each delay doubled up to a cap, until the task is terminal (its state is then published through
 * the task watch, freeing its leases) or the polls run out (the upstream is gone or the task never
 * ends: the task is given up and its leases are freed).
 *
 * @example
 * ```ts
 * follower.follow('task-1', query);
 * ```
 */
export class TaskFollower {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly options: TaskFollowerOptions) {}

  /** Tasks being followed. */
  size(): number {
    return this.timers.size;
  }

  /** Starts following `taskId` (no-op when already followed or no longer watched). */
  follow(taskId: string, query: TaskQuery): void {
    if (this.closed || this.timers.has(taskId) || !this.options.watch.watching(taskId)) return;
    this.schedule(taskId, query, this.options.firstDelayMs, 1);
  }

  /** Stops every poll (the watched tasks are left to the caller). */
  close(): void {
    this.closed = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private schedule(taskId: string, query: TaskQuery, delayMs: number, poll: number): void {
    const timer = setTimeout(() => void this.poll(taskId, query, delayMs, poll), delayMs);
    timer.unref();
    this.timers.set(taskId, timer);
  }

  private async poll(taskId: string, query: TaskQuery, delayMs: number, poll: number) {
    const { watch } = this.options;
    if (this.closed) return;
    if (!watch.watching(taskId)) {
      this.timers.delete(taskId);
      return;
    }
    let alive = true;
    try {
      const answer = await getTask(this.options.dispatcher, query, taskId, this.options.timeoutMs);
      const sighting = answer.sighting;
      if (sighting?.kind === 'task' && sighting.taskId === taskId) {
        alive = watch.task(undefined, taskId, sighting.state, sighting.object);
      }
    } catch {
      // Unreachable this time: counted as a poll.
    }
    if (this.closed) return;
    if (!alive || !watch.watching(taskId)) {
      this.timers.delete(taskId);
      return;
    }
    if (poll >= this.options.maxPolls) {
      this.timers.delete(taskId);
      watch.finish(taskId);
      return;
    }
    this.schedule(taskId, query, Math.min(delayMs * 2, this.options.maxDelayMs), poll + 1);
  }
}
