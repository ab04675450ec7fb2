/**
 * The Python standard-library A2A agent (test/fixtures/python-agent) read by the SDK's own client
 * on each binding it serves (JSON-RPC, HTTP+JSON, gRPC with python3-grpcio): card, both answers,
 * a stream to its terminal event, GetTask, CancelTask, SubscribeToTask, token usage in metadata,
 * its counters, and its plain 429/503 modes. Under CI=true a missing python3 (or grpc) fails.
 */
import type { Message, StreamResponse, Task } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type PythonAgent,
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';

/** `TaskState` values of the SDK's generated enum. */
const WORKING = 2;
const COMPLETED = 3;
const CANCELED = 5;

const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const;
type Binding = (typeof BINDINGS)[number];

const plain = pythonAgentSupport(false);
const withGrpc = pythonAgentSupport(true);

function supportFor(binding: Binding) {
  return binding === 'GRPC' ? withGrpc : plain;
}

async function clientFor(agent: PythonAgent, binding: Binding): Promise<Client> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new GrpcTransportFactory()],
      preferredTransports: [binding],
    }),
  );
  return factory.createFromUrl(agent.url);
}

/** A user message; `taskSeconds` overrides the agent's for this message only. */
function message(messageId: string, taskSeconds?: number): Message {
  const base = textMessage({ messageId, text: `text of ${messageId}` });
  return taskSeconds === undefined ? base : { ...base, metadata: { fixture: { taskSeconds } } };
}

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** The state of each event, `task:2`, `status:3`, … */
function states(events: readonly StreamResponse[]): string[] {
  return events.map((e) => {
    const p = e.payload;
    if (p?.$case === 'task') return `task:${p.value.status?.state}`;
    if (p?.$case === 'statusUpdate') return `status:${p.value.status?.state}`;
    return p?.$case ?? 'none';
  });
}

describe('the Python agent is runnable here', () => {
  it('python3 (and python3-grpcio) present, required under CI=true', () => {
    if (pythonAgentRequired) {
      expect(plain.available, plain.reason).toBe(true);
      expect(withGrpc.available, withGrpc.reason).toBe(true);
    } else if (!plain.available || !withGrpc.available) {
      console.warn(
        `[python-agent] skipping what needs it: ${plain.reason}; ${withGrpc.reason} (CI=true fails instead)`,
      );
    }
  });
});

describe.each(BINDINGS)('the SDK client on %s', (binding) => {
  const support = supportFor(binding);
  const run = support.available || pythonAgentRequired;
  let agent: PythonAgent;
  let client: Client;

  beforeAll(async () => {
    if (!run) return;
    agent = await startPythonAgent({
      taskSeconds: 60,
      usageTokens: 4000,
      updateSeconds: 0.2,
      grpc: binding === 'GRPC',
    });
    client = await clientFor(agent, binding);
  });
  afterAll(async () => {
    await agent?.stop();
  });

  it.runIf(run)('reads the card and the extended card', async () => {
    const res = await fetch(`${agent.url}/.well-known/agent-card.json`);
    const card = (await res.json()) as {
      capabilities: { streaming: boolean };
      supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[];
    };
    expect(card.capabilities.streaming).toBe(true);
    const bindings = card.supportedInterfaces.map((i) => i.protocolBinding);
    expect(bindings).toEqual(
      binding === 'GRPC' ? ['JSONRPC', 'HTTP+JSON', 'GRPC'] : ['JSONRPC', 'HTTP+JSON'],
    );
    const extended = await client.getAgentCard();
    expect(extended.name).toBe('python-stdlib-agent (extended)');
    expect(extended.capabilities?.streaming).toBe(true);
    expect(extended.supportedInterfaces.map((i) => i.protocolBinding)).toEqual(bindings);
  });

  it.runIf(run)('answers SendMessage with a completed task reporting its usage', async () => {
    const task = (await client.sendMessage({
      message: message(`${binding}-done`, 0),
    } as never)) as Task;
    expect(task.id).not.toBe('');
    expect(task.status?.state).toBe(COMPLETED);
    expect(task.metadata).toEqual({ usage: { totalTokens: 4000 } });
    expect(task.history[0]?.messageId).toBe(`${binding}-done`);
    const again = await client.getTask({ id: task.id } as never);
    expect(again.status?.state).toBe(COMPLETED);
    expect(again.metadata).toEqual({ usage: { totalTokens: 4000 } });
  });

  it.runIf(run)('answers SendMessage with a Message in message mode', async () => {
    await agent.setMode({ answer: 'message' });
    try {
      const answer = (await client.sendMessage({
        message: message(`${binding}-msg`),
      } as never)) as Message;
      expect(answer.role).toBe(2);
      expect(answer.parts[0]?.content).toEqual({ $case: 'text', value: `text of ${binding}-msg` });
      expect(answer.metadata).toEqual({ usage: { totalTokens: 4000 } });
    } finally {
      await agent.setMode({ answer: 'task' });
    }
  });

  it.runIf(run)('streams a task to its terminal event, usage on the last one', async () => {
    const events = await collect(
      client.sendMessageStream({ message: message(`${binding}-stream`, 0.6) } as never),
    );
    const seen = states(events);
    expect(seen[0]).toBe(`task:${WORKING}`);
    expect(seen.at(-1)).toBe(`status:${COMPLETED}`);
    expect(seen.slice(1, -1).every((s) => s === `status:${WORKING}`)).toBe(true);
    const last = events.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' && last.value.metadata).toEqual({
      usage: { totalTokens: 4000 },
    });
    const first = events[0]?.payload;
    const taskId = first?.$case === 'task' ? first.value.id : '';
    expect(last?.$case === 'statusUpdate' && last.value.taskId).toBe(taskId);
  });

  it.runIf(run)('keeps a task WORKING, cancels it, and refuses a second cancel', async () => {
    const task = (await client.sendMessage({
      message: message(`${binding}-long`),
    } as never)) as Task;
    expect(task.status?.state).toBe(WORKING);
    expect((await client.getTask({ id: task.id } as never)).status?.state).toBe(WORKING);
    const canceled = await client.cancelTask({ id: task.id } as never);
    expect(canceled.status?.state).toBe(CANCELED);
    expect(canceled.metadata).toBeUndefined();
    expect((await client.getTask({ id: task.id } as never)).status?.state).toBe(CANCELED);
    await expect(client.cancelTask({ id: task.id } as never)).rejects.toMatchObject({
      name: 'TaskNotCancelableError',
    });
    await expect(client.getTask({ id: 'no-such-task' } as never)).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
  });

  it.runIf(run)('follows a WORKING task with SubscribeToTask until it is cancelled', async () => {
    const task = (await client.sendMessage({
      message: message(`${binding}-sub`),
    } as never)) as Task;
    const events: StreamResponse[] = [];
    const following = (async () => {
      for await (const event of client.resubscribeTask({ id: task.id } as never)) {
        events.push(event);
        // Cancel once the subscription has shown the task and one WORKING update.
        if (events.length === 2) await client.cancelTask({ id: task.id } as never);
      }
    })();
    await following;
    const seen = states(events);
    expect(seen[0]).toBe(`task:${WORKING}`);
    expect(seen.at(-1)).toBe(`status:${CANCELED}`);
  });

  it.runIf(run)('counts every call by method and binding, and every run by messageId', async () => {
    await agent.reset();
    await client.sendMessage({ message: message(`${binding}-count-a`, 0) } as never);
    await client.sendMessage({ message: message(`${binding}-count-a`, 0) } as never);
    const task = (await client.sendMessage({
      message: message(`${binding}-count-b`, 0),
    } as never)) as Task;
    await client.getTask({ id: task.id } as never, {
      serviceParameters: { authorization: 'Bearer key-1' },
    });
    const counts = await agent.counts();
    expect(counts.requests).toBe(4);
    expect(counts.byMethod).toEqual({ SendMessage: 3, GetTask: 1 });
    expect(counts.byBinding).toEqual({ [binding]: 4 });
    expect(counts.byAuthorization).toEqual({ '(none)': 3, 'Bearer key-1': 1 });
    const log = await agent.requests();
    expect(log.map((r) => r.method)).toEqual([
      'SendMessage',
      'SendMessage',
      'SendMessage',
      'GetTask',
    ]);
    expect(log.at(-1)?.headers.authorization).toBe('Bearer key-1');
    const getTaskPath = {
      JSONRPC: '/a2a/jsonrpc',
      'HTTP+JSON': `/a2a/rest/tasks/${task.id}`,
      GRPC: '/lf.a2a.v1.A2AService/GetTask',
    }[binding];
    expect(log.at(-1)?.path).toBe(getTaskPath);
    expect(counts.runsByMessageId).toEqual({
      [`${binding}-count-a`]: 2,
      [`${binding}-count-b`]: 1,
    });
    expect(counts.runs).toBe(3);
  });
});

describe.each([429, 503] as const)('the agent rejecting every call with %i', (status) => {
  const run = plain.available || pythonAgentRequired;
  const grpc = withGrpc.available || pythonAgentRequired;
  let agent: PythonAgent;

  beforeAll(async () => {
    if (!run) return;
    agent = await startPythonAgent(
      status === 429
        ? { reject429RetryAfterSeconds: 3, grpc }
        : { reject503RetryAfterSeconds: 7, grpc },
    );
  });
  afterAll(async () => {
    await agent?.stop();
  });
  const retryAfter = status === 429 ? '3' : '7';

  it.runIf(run)('answers plain HTTP with Retry-After on JSON-RPC and REST', async () => {
    const rpc = await fetch(agent.jsonRpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
    });
    expect(rpc.status).toBe(status);
    expect(rpc.headers.get('retry-after')).toBe(retryAfter);
    expect(rpc.headers.get('content-type')).toBe('text/plain');
    await rpc.body?.cancel();
    const rest = await fetch(`${agent.restUrl}/tasks/x`);
    expect(rest.status).toBe(status);
    expect(rest.headers.get('retry-after')).toBe(retryAfter);
    await rest.body?.cancel();
  });

  it.runIf(run && grpc)('is read by the SDK client on each binding as that status', async () => {
    await agent.reset();
    const rpc = await clientFor(agent, 'JSONRPC');
    await expect(rpc.sendMessage({ message: message('r-1') } as never)).rejects.toThrow(
      `Status: ${status}`,
    );
    const rest = await clientFor(agent, 'HTTP+JSON');
    const restError = await rest.sendMessage({ message: message('r-2') } as never).catch((e) => e);
    expect(restError).toMatchObject({ statusCode: status, headers: { 'retry-after': retryAfter } });
    const grpc = await clientFor(agent, 'GRPC');
    const grpcError = await grpc.sendMessage({ message: message('r-3') } as never).catch((e) => e);
    expect(grpcError).toMatchObject({ status: status === 429 ? 8 : 14 });
    const trailers = (grpcError as { cause?: { metadata?: { get(k: string): unknown[] } } }).cause
      ?.metadata;
    expect(trailers?.get('retry-after')).toEqual([retryAfter]);
    const counts = await agent.counts();
    expect(counts.requests).toBe(3);
    expect(counts.rejected).toBe(3);
    expect(counts.runs).toBe(0);
    expect(counts.byBinding).toEqual({ JSONRPC: 1, 'HTTP+JSON': 1, GRPC: 1 });
  });
});
