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
import { createTaskEventRelay } from 'a2a-ratelimit/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

/**
 * Asks for input on its first run and returns (the SDK keeps the bus alive); completes on the
 * follow-up message; a cancel while it waits publishes CANCELED on the kept bus.
 */
function askingExecutor(name: string, runs: string[]): AgentExecutor {
  const status = (taskId: string, contextId: string, state: string) =>
    AgentEvent.statusUpdate(
      TaskStatusUpdateEvent.fromJSON({
        taskId,
        contextId,
        status: {
          state,
          message: {
            messageId: `${state}-${taskId}`,
            role: 'ROLE_AGENT',
            parts: [{ text: `${state} by ${name}` }],
          },
        },
      }),
    );
  const contexts = new Map<string, string>();
  return {
    async execute(ctx, bus) {
      runs.push(`${name}:${ctx.taskId}`);
      if (ctx.task === undefined) {
        contexts.set(ctx.taskId, ctx.contextId);
        bus.publish(
          AgentEvent.task(
            Task.fromJSON({
              id: ctx.taskId,
              contextId: ctx.contextId,
              status: { state: 'TASK_STATE_WORKING' },
            }),
          ),
        );
        bus.publish(status(ctx.taskId, ctx.contextId, 'TASK_STATE_INPUT_REQUIRED'));
        return;
      }
      bus.publish(status(ctx.taskId, ctx.contextId, 'TASK_STATE_COMPLETED'));
    },
    async cancelTask(taskId, bus) {
      bus.publish(status(taskId, contexts.get(taskId) ?? '', 'TASK_STATE_CANCELED'));
    },
  };
}

describe.runIf(redisUp)('task-event relay (two replicas, one Redis)', () => {
  let client: Redis;
  const prefix = runPrefix('relay');
  const relays: ReturnType<typeof createTaskEventRelay>[] = [];
  const taskStore = new InMemoryTaskStore();
  const runs: string[] = [];

  function replica(name: string, holdMs: number, agent = executor(name, runs, holdMs)) {
    const relay = createTaskEventRelay({
      client,
      keyPrefix: prefix,
      ownerTtlMs: 600,
      cancelTimeoutMs: 1500,
    });
    relays.push(relay);
    const manager = relay.eventBusManager(new DefaultExecutionEventBusManager());
    const handler = relay.requestHandler(
      new DefaultRequestHandler(card, taskStore, agent, manager),
    );
    return { relay, handler };
  }

  /** Sends one message on `handler` and waits for its answer (the task). */
  async function send(handler: DefaultRequestHandler, taskId?: string) {
    return (await handler.sendMessage(
      {
        message: {
          messageId: `m-${Math.random()}`,
          role: 1,
          ...(taskId === undefined ? {} : { taskId }),
          parts: [{ content: { $case: 'text', value: 'go' } }],
        },
      } as never,
      context(),
    )) as { id: string; status?: { state?: number } };
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

  it('a task left input-required after its executor returned is owned but not renewed; cancel and follow-ups still work', async () => {
    const a = replica('a4', 0, askingExecutor('a4', runs));
    const b = replica('b4', 0, askingExecutor('b4', runs));
    // Two tasks wait for input on replica a, their executors returned.
    const first = await send(a.handler);
    const second = await send(a.handler);
    expect(first.status?.state).toBe(6); // INPUT_REQUIRED
    await sleep(50);
    expect(a.relay.ownedTasks()).toBe(2);
    expect(a.relay.runningTasks()).toBe(0);
    // Their owner keys were written once, for as long as their events stay readable (1 h), and
    // two renewal periods later (every 200 ms) no renewal has set them back to 600 ms.
    await sleep(500);
    for (const id of [first.id, second.id]) {
      expect(await client.get(`${prefix}ro{${id}}`)).toBe(a.relay.replicaId);
      expect(await client.pttl(`${prefix}ro{${id}}`)).toBeGreaterThan(60_000);
    }
    // A cancel on replica b reaches the owner's kept bus.
    const canceled = await b.handler.cancelTask(
      { id: first.id, tenant: '', metadata: {} },
      context(),
    );
    expect(canceled.status?.state).toBe(5);
    expect(JSON.stringify(canceled.status?.message ?? {})).toContain('by a4');
    // A follow-up on the owner runs the task again (renewed while it runs) and completes it;
    // a resubscriber on replica b sees the end.
    const watched = (async () => {
      const states: number[] = [];
      for await (const event of b.handler.resubscribe({ id: second.id, tenant: '' }, context())) {
        const payload = (event as { payload?: { value: { status?: { state?: number } } } }).payload;
        states.push(payload?.value.status?.state ?? -1);
      }
      return states;
    })();
    await sleep(100);
    const done = await send(a.handler, second.id);
    expect(done.status?.state).toBe(3); // COMPLETED
    expect((await watched).at(-1)).toBe(3);
    expect(a.relay.runningTasks()).toBe(0);
  });
});
