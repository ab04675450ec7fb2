/**
 * @module task-events
 * The SDK's task event shapes the limiter watches, structurally, and the task states that end a
 * task.
 */

/**
 * The SDK's `ExecutionEventBus`, structurally (what `DefaultRequestHandler` and executors call).
 *
 * @example
 * ```ts
 * bus.on('event', (e) => console.log(e.kind));
 * ```
 */
export interface EventBusLike {
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's event union is not expressible structurally
  publish(event: any): void;
  finished(): void;
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's listener unions are not expressible structurally
  on(eventName: 'event' | 'finished', listener: (event: any) => void): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: as `on`
  off(eventName: 'event' | 'finished', listener: (event: any) => void): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: as `on`
  once?(eventName: 'event' | 'finished', listener: (event: any) => void): unknown;
  removeAllListeners?(eventName?: 'event' | 'finished'): unknown;
}

/**
 * The SDK's `ExecutionEventBusManager`, structurally (`DefaultExecutionEventBusManager` fits).
 */
export interface EventBusManagerLike {
  createOrGetByTaskId(taskId: string, context?: unknown): EventBusLike;
  getByTaskId(taskId: string, context?: unknown): EventBusLike | undefined;
  cleanupByTaskId(taskId: string, context?: unknown): void;
}

/**
 * A2A `TaskState` numbers (proto enum) that end a task.
 *
 * @example
 * ```ts
 * TERMINAL_TASK_STATES.has(4); // true (TASK_STATE_FAILED)
 * ```
 */
export const TERMINAL_TASK_STATES: ReadonlySet<number> = new Set([3, 4, 5, 7]);
