/**
 * @module research-executor
 * The research agent's work (its `AgentExecutor`): a task worked on for a set duration, then
 * completed; counted while it runs.
 */

import { Message, Task, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor } from '@a2a-js/sdk/server';
import type { Sleep } from './scaled-time.js';

function textOf(message: Message): string {
  for (const part of message.parts) {
    const content = (part as { content?: { $case?: string; value?: unknown } }).content;
    if (content?.$case === 'text' && typeof content.value === 'string') return content.value;
  }
  return '';
}

/** How long each task works before it completes, on `sleep`'s time. */
export interface ResearchTask {
  readonly durationMs: number;
  readonly sleep: Sleep;
}

/** Counts the tasks working at once. */
export interface TaskCounter {
  running: number;
  peak: number;
}

/** The agent's work: a task that is worked on (for `task.durationMs`) and completed with a note. */
export function researchExecutor(
  counter: TaskCounter,
  task: ResearchTask | undefined,
  used: (ctx: Parameters<AgentExecutor['execute']>[0]) => void,
): AgentExecutor {
  return {
    async execute(ctx, bus) {
      counter.running++;
      counter.peak = Math.max(counter.peak, counter.running);
      try {
        await researchTask(ctx, bus, task);
      } finally {
        counter.running--;
        used(ctx);
      }
    },
    cancelTask,
  };
}

async function researchTask(
  ctx: Parameters<AgentExecutor['execute']>[0],
  bus: Parameters<AgentExecutor['execute']>[1],
  task: ResearchTask | undefined,
): Promise<void> {
  const { taskId, contextId } = ctx;
  const topic = textOf(ctx.userMessage).slice(0, 200) || 'nothing in particular';
  if (ctx.task === undefined) {
    bus.publish(
      AgentEvent.task(
        Task.fromJSON({
          id: taskId,
          contextId,
          status: { state: 'TASK_STATE_WORKING' },
          history: [Message.toJSON(ctx.userMessage)],
        }),
      ),
    );
  }
  if (task !== undefined && task.durationMs > 0) await task.sleep(task.durationMs);
  bus.publish(
    AgentEvent.statusUpdate(
      TaskStatusUpdateEvent.fromJSON({
        taskId,
        contextId,
        status: {
          state: 'TASK_STATE_COMPLETED',
          timestamp: new Date().toISOString(),
          message: {
            messageId: `notes-${taskId}`,
            contextId,
            taskId,
            role: 'ROLE_AGENT',
            parts: [{ text: `Research notes on "${topic}": done.` }],
          },
        },
      }),
    ),
  );
  bus.finished();
}

const cancelTask: AgentExecutor['cancelTask'] = async (taskId, bus) => {
  bus.publish(
    AgentEvent.statusUpdate(
      TaskStatusUpdateEvent.fromJSON({
        taskId,
        status: { state: 'TASK_STATE_CANCELED', timestamp: new Date().toISOString() },
      }),
    ),
  );
  bus.finished();
};
