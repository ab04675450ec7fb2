/**
 * The task-event relay on a real Redis, two "replicas" in one process (each its own relay, SDK
 * request handler and bus manager; one task store between them, as a shared database would be):
 * a resubscription on the replica that does not own the task streams the owner's events to the
 * terminal one; a cancel there stops the owner's executor; a resubscription to a task whose owner
 * died ends once the owner key lapses instead of hanging; a cancel whose owner is gone falls back
 * to the SDK's own answer.
 */

import { AgentCard, Task, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  InMemoryTaskStore,
  ServerCallContext,
} from '@a2a-js/sdk/server';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTaskEventRelay } from '../src/redis/task-event-relay.js';
import type { TaskEventRelay } from '../src/redis/task-event-relay-options.js';
import {
  connectRedis,
  deletePrefix,
  probeRedis,
  REDIS_URL,
  requireOrSkip,
  runPrefix,
} from './fixtures/redis/redis-env.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const context = () => new ServerCallContext({ user: { isAuthenticated: true, userName: 'alice' } });

const card = AgentCard.fromJSON({
  name: 'relay',
  supportedInterfaces: [],
  capabilities: { streaming: true },
});

/** Works until cancelled or `holdMs` passed; counts its runs and cancels per replica. */
function executor(name: string, runs: string[], holdMs: number): AgentExecutor {
  const running = new Map<string, () => void>();
  return {
    async execute(ctx, bus) {
      runs.push(`${name}:${ctx.taskId}`);
      bus.publish(
        AgentEvent.task(
          Task.fromJSON({
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: { state: 'TASK_STATE_WORKING' },
          }),
        ),
      );
      const state = await new Promise<string>((resolve) => {
        const timer = setTimeout(() => resolve('TASK_STATE_COMPLETED'), holdMs);
        running.set(ctx.taskId, () => {
          clearTimeout(timer);
          resolve('TASK_STATE_CANCELED');
        });
      });
      running.delete(ctx.taskId);
      bus.publish(
        AgentEvent.statusUpdate(
          TaskStatusUpdateEvent.fromJSON({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            status: {
              state,
              message: {
                messageId: `end-${ctx.taskId}`,
                role: 'ROLE_AGENT',
                parts: [{ text: `${state} by ${name}` }],
              },
            },
          }),
        ),
      );
      bus.finished();
    },
    async cancelTask(taskId) {
      running.get(taskId)?.();
    },
  };
}

describe.runIf(redisUp)('task-event relay (two replicas, one Redis)', () => {
  let client: Redis;
  const prefix = runPrefix('relay');
  const relays: TaskEventRelay[] = [];
  const taskStore = new InMemoryTaskStore();
  const runs: string[] = [];

  function replica(name: string, holdMs: number) {
    const relay = createTaskEventRelay({
      client,
      keyPrefix: prefix,
      ownerTtlMs: 600,
      cancelTimeoutMs: 1500,
    });
    relays.push(relay);
    const manager = relay.eventBusManager(new DefaultExecutionEventBusManager());
    const handler = relay.requestHandler(
      new DefaultRequestHandler(card, taskStore, executor(name, runs, holdMs), manager),
    );
    return { relay, handler };
  }

  /** Starts a message on `handler` without waiting for its end; resolves to its task id. */
  async function start(handler: DefaultRequestHandler): Promise<string> {
    const result = await handler.sendMessage(
      {
        message: {
          messageId: `m-${Math.random()}`,
          role: 1,
          parts: [{ content: { $case: 'text', value: 'go' } }],
        },
        configuration: { returnImmediately: true },
      } as never,
      context(),
    );
    return (result as { id: string }).id;
  }

  beforeAll(async () => {
    client = await connectRedis();
  });
  afterAll(async () => {
    await Promise.all(relays.map((r) => r.close()));
    await deletePrefix(client, prefix);
    client.disconnect();
  });

  it('resubscribe on the other replica streams the owner’s events to the terminal one', async () => {
    const a = replica('a', 800);
    const b = replica('b', 800);
    const taskId = await start(a.handler);
    const states: string[] = [];
    for await (const event of b.handler.resubscribe({ id: taskId, tenant: '' }, context())) {
      const payload = (
        event as { payload?: { $case: string; value: { status?: { state?: number } } } }
      ).payload;
      states.push(`${payload?.$case}:${payload?.value.status?.state}`);
    }
    expect(states[0]).toBe('task:2'); // the stored snapshot, WORKING
    expect(states.at(-1)).toBe('statusUpdate:3'); // COMPLETED, from the owner
    expect(runs.filter((r) => r.endsWith(taskId))).toEqual([`a:${taskId}`]);
  });

  it('cancel on the other replica stops the owner’s executor', async () => {
    const a = replica('a2', 30_000);
    const b = replica('b2', 30_000);
    const taskId = await start(a.handler);
    await sleep(100);
    const canceled = await b.handler.cancelTask(
      { id: taskId, tenant: '', metadata: {} },
      context(),
    );
    expect(canceled.status?.state).toBe(5); // CANCELED
    expect(JSON.stringify(canceled.status?.message ?? {})).toContain('by a2');
    expect(a.relay.ownedTasks()).toBe(0);
  });

  it('the owner died: a resubscription ends once its owner key lapses, a cancel falls back to the SDK', async () => {
    const a = replica('a3', 3_000);
    const b = replica('b3', 30_000);
    const taskId = await start(a.handler);
    await sleep(100);
    await a.relay.close(); // stops renewing; its executor goes on, as in a hung process
    await client.pexpire(`${prefix}ro{${taskId}}`, 200); // the owner key lapses soon
    const started = Date.now();
    const events: unknown[] = [];
    for await (const event of b.handler.resubscribe({ id: taskId, tenant: '' }, context())) {
      events.push(event);
    }
    expect(events.length).toBe(1); // the snapshot, then the end: no hang
    expect(Date.now() - started).toBeLessThan(10_000);
    const canceled = await b.handler.cancelTask(
      { id: taskId, tenant: '', metadata: {} },
      context(),
    );
    expect(canceled.status?.state).toBe(5); // marked canceled by the SDK itself (no owner)
  });
});
