/**
 * The Python test agent's behaviour the gateway tests lean on, beyond the SDK client's basic calls:
 * a burst of 30 callers all counted, push delivery with usage, a REST tenant path, unrouted paths
 * counted and never run, a blocking call whose gRPC caller cancels or runs out of deadline (seen by
 * the agent), a gRPC stream closed by its caller, and the rejection mode switched at run time.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Message, Task } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type PythonAgent,
  type PythonAgentCounts,
  type PythonAgentOptions,
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';

const runPlain = pythonAgentSupport(false).available || pythonAgentRequired;
const runGrpc = pythonAgentSupport(true).available || pythonAgentRequired;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((close) => close()));
});

async function agentWith(options: PythonAgentOptions): Promise<PythonAgent> {
  const agent = await startPythonAgent(options);
  cleanups.push(() => agent.stop());
  return agent;
}

async function clientFor(
  agent: PythonAgent,
  binding: string,
  grpcCallOptions?: { deadline: Date },
): Promise<Client> {
  const grpc = new GrpcTransportFactory(grpcCallOptions ? { grpcCallOptions } : undefined);
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [grpc],
      preferredTransports: [binding],
    }),
  ).createFromUrl(agent.url);
}

function message(messageId: string, taskSeconds?: number): Message {
  const base = textMessage({ messageId, text: messageId });
  return taskSeconds === undefined ? base : { ...base, metadata: { fixture: { taskSeconds } } };
}

/** Reads the counters until `done` holds (bounded by the test's own timeout). */
async function countsWhen(
  agent: PythonAgent,
  done: (c: PythonAgentCounts) => boolean,
): Promise<PythonAgentCounts> {
  for (;;) {
    const counts = await agent.counts();
    if (done(counts)) return counts;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function rpc(method: string, params: unknown, id = 1) {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

async function readBody(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body;
}

/** A webhook receiver on loopback, keeping what it is sent. */
async function webhook(): Promise<{
  url: string;
  received: { auth: string | undefined; body: Record<string, unknown> }[];
}> {
  const received: { auth: string | undefined; body: Record<string, unknown> }[] = [];
  const receiver: Server = createServer(async (req, res) => {
    received.push({
      auth: req.headers.authorization,
      body: JSON.parse(await readBody(req)) as Record<string, unknown>,
    });
    res.writeHead(200).end();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => receiver.close(() => r())));
  return { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, received };
}

describe.runIf(runPlain)('the Python agent over HTTP', () => {
  it('counts a burst of 30 SendMessage on each HTTP binding, each run once', async () => {
    const agent = await agentWith({ taskSeconds: 60 });
    const sends = Array.from({ length: 30 }, (_, i) =>
      i % 2 === 0
        ? fetch(agent.jsonRpcUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: rpc('SendMessage', { message: { messageId: `b-${i}`, parts: [{ text: 'x' }] } }),
          })
        : fetch(`${agent.restUrl}/message:send`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ message: { messageId: `b-${i}`, parts: [{ text: 'x' }] } }),
          }),
    );
    const answers = await Promise.all(sends);
    expect(answers.map((a) => a.status)).toEqual(Array(30).fill(200));
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as Record<string, unknown>[];
    const states = bodies.map((b, i) => {
      const task = (i % 2 === 0 ? (b.result as { task: Task }).task : b.task) as {
        status: { state: string };
      };
      return task.status.state;
    });
    expect(new Set(states)).toEqual(new Set(['TASK_STATE_WORKING']));
    const counts = await agent.counts();
    expect(counts.requests).toBe(30);
    expect(counts.byBinding).toEqual({ JSONRPC: 15, 'HTTP+JSON': 15 });
    expect(Object.keys(counts.runsByMessageId)).toHaveLength(30);
    expect(new Set(Object.values(counts.runsByMessageId))).toEqual(new Set([1]));
    const listed = (await (await fetch(`${agent.restUrl}/tasks`)).json()) as { tasks: unknown[] };
    expect(listed.tasks).toHaveLength(30);
  });

  it('delivers push events with the usage report, and serves push configs', async () => {
    const { url: hook, received } = await webhook();
    const agent = await agentWith({ taskSeconds: 0, usageTokens: 4000 });
    const sent = await fetch(agent.jsonRpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: rpc('SendMessage', {
        message: { messageId: 'p-1', parts: [{ text: 'x' }] },
        configuration: {
          taskPushNotificationConfig: {
            url: hook,
            authentication: { scheme: 'Bearer', credentials: 'hook-secret' },
          },
        },
      }),
    });
    const task = ((await sent.json()) as { result: { task: { id: string } } }).result.task;
    const counts = await countsWhen(agent, (c) => c.pushesSent + c.pushFailures >= 2);
    expect(counts.pushesSent).toBe(2);
    expect(counts.pushUrls).toEqual({ [hook]: 2 });
    expect(received.map((r) => Object.keys(r.body)[0])).toEqual(['task', 'statusUpdate']);
    expect(received.every((r) => r.auth === 'Bearer hook-secret')).toBe(true);
    expect(received[1]?.body).toMatchObject({
      statusUpdate: {
        taskId: task.id,
        status: { state: 'TASK_STATE_COMPLETED' },
        metadata: { usage: { totalTokens: 4000 } },
      },
    });

    const client = await clientFor(agent, 'HTTP+JSON');
    const created = await client.createTaskPushNotificationConfig({
      taskId: task.id,
      url: `${hook}/2`,
      token: 't',
    } as never);
    expect(created.id).not.toBe('');
    const listed = await client.listTaskPushNotificationConfig({ taskId: task.id } as never);
    expect(listed.configs.map((c) => c.url).sort()).toEqual([hook, `${hook}/2`]);
  });

  it('routes a REST tenant path, counts unrouted paths and runs nothing for them', async () => {
    const agent = await agentWith({ taskSeconds: 0 });
    const tenant = await fetch(`${agent.restUrl}/acme/message:send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: { messageId: 't-1', parts: [{ text: 'x' }] } }),
    });
    expect(tenant.status).toBe(200);
    await tenant.body?.cancel();
    for (const [method, path] of [
      ['POST', '/a2a/rest/message:SEND'],
      ['POST', '/a2a/rest/message:send/'],
      ['GET', '/a2a/rest/message:send'],
      ['POST', '/a2a/nowhere'],
    ] as const) {
      const res = await fetch(`${agent.url}${path}`, {
        method,
        ...(method === 'POST'
          ? { body: JSON.stringify({ message: { messageId: 'never', parts: [] } }) }
          : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(404);
      await res.body?.cancel();
    }
    const counts = await agent.counts();
    expect(counts.byMethod).toEqual({ SendMessage: 1, '(unknown)': 4 });
    expect(counts.runsByMessageId).toEqual({ 't-1': 1 });
  });

  it('counts JSON-RPC batches, v0.3 names and non-string methods and runs none of them', async () => {
    const agent = await agentWith({ taskSeconds: 0 });
    const send = { message: { messageId: 'never', parts: [{ text: 'x' }] } };
    const bodies = [
      JSON.stringify([JSON.parse(rpc('SendMessage', send))]),
      rpc('message/send', send),
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: ['SendMessage'], params: send }),
      '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": ',
    ];
    const codes: number[] = [];
    for (const body of bodies) {
      const res = await fetch(agent.jsonRpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      codes.push(((await res.json()) as { error: { code: number } }).error.code);
    }
    expect(codes).toEqual([-32600, -32601, -32600, -32700]);
    const head = await fetch(`${agent.restUrl}/tasks/x:subscribe`, { method: 'HEAD' });
    expect(head.status).toBe(404);
    const counts = await agent.counts();
    expect(counts.byMethod).toEqual({ '(invalid)': 3, 'message/send': 1, '(unknown)': 1 });
    expect(counts.runs).toBe(0);
  });

  it('cuts an open stream when killed, and is gone afterwards', async () => {
    const agent = await agentWith({ taskSeconds: 60, updateSeconds: 0.1 });
    const client = await clientFor(agent, 'HTTP+JSON');
    let events = 0;
    const outcome = (async () => {
      for await (const _ of client.sendMessageStream({ message: message('k-1') } as never)) {
        events += 1;
        if (events === 2) await agent.kill();
      }
      return 'ended';
    })().catch(() => 'cut');
    expect(await outcome).toBe('cut');
    await expect(fetch(`${agent.url}/_test/counts`)).rejects.toThrow();
  });

  it('switches to rejecting at run time and back', async () => {
    const agent = await agentWith({ taskSeconds: 0 });
    await agent.setMode({ reject: 503, retryAfter: 5 });
    const refused = await fetch(`${agent.restUrl}/tasks/x`);
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '5']);
    await refused.body?.cancel();
    await agent.setMode({ reject: null });
    const answered = await fetch(`${agent.restUrl}/tasks/x`);
    expect(answered.status).toBe(404);
    expect(await answered.json()).toMatchObject({ error: { status: 'NOT_FOUND' } });
    const counts = await agent.counts();
    expect([counts.requests, counts.rejected]).toEqual([2, 1]);
  });
});

describe.runIf(runGrpc)('the Python agent over gRPC', () => {
  it('sees a blocking SendMessage cancelled by its caller', async () => {
    const agent = await agentWith({ taskSeconds: 60, blocking: true, grpc: true });
    const client = await clientFor(agent, 'GRPC');
    const abort = new AbortController();
    const call = client
      .sendMessage({ message: message('c-1') } as never, { signal: abort.signal })
      .catch((e: unknown) => e);
    await countsWhen(agent, (c) => c.runs === 1);
    abort.abort();
    expect(await call).toBeInstanceOf(Error);
    const counts = await countsWhen(agent, (c) => c.callsClosedByClient === 1);
    expect(counts.byMethod).toEqual({ SendMessage: 1 });
  });

  it('sees the deadline of a blocking SendMessage, and the caller leaving when it passes', async () => {
    const agent = await agentWith({ taskSeconds: 60, blocking: true, grpc: true });
    const client = await clientFor(agent, 'GRPC', { deadline: new Date(Date.now() + 2_000) });
    const error = await client.sendMessage({ message: message('d-1') } as never).catch((e) => e);
    expect(error).toMatchObject({ status: 4 });
    const counts = await countsWhen(agent, (c) => c.callsClosedByClient === 1);
    expect(counts.grpcCallsWithDeadline).toBe(1);
  });

  it('sees a stream closed by its caller before the task ends', async () => {
    const agent = await agentWith({ taskSeconds: 60, grpc: true, updateSeconds: 0.1 });
    const client = await clientFor(agent, 'GRPC');
    const abort = new AbortController();
    let events = 0;
    const stream = client.sendMessageStream({ message: message('s-1') } as never, {
      signal: abort.signal,
    });
    await (async () => {
      for await (const _ of stream) {
        events += 1;
        if (events === 2) abort.abort();
      }
    })().catch(() => undefined);
    const counts = await countsWhen(agent, (c) => c.openStreams === 0);
    expect(counts.streamsOpened).toBe(1);
    expect(counts.streamsClosedByClient).toBe(1);
  });

  it('takes push configs on gRPC, from SendMessage and on their own, and delivers', async () => {
    const { url: hook, received } = await webhook();
    const agent = await agentWith({ taskSeconds: 0, usageTokens: 4000, grpc: true });
    const client = await clientFor(agent, 'GRPC');
    const task = (await client.sendMessage({
      tenant: '',
      message: message('gp-1'),
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: {
          tenant: '',
          id: '',
          taskId: '',
          url: hook,
          token: 'tok',
          authentication: { scheme: 'Bearer', credentials: 'hook-secret' },
        },
        historyLength: undefined,
        returnImmediately: false,
      },
      metadata: undefined,
    } as never)) as Task;
    const counts = await countsWhen(agent, (c) => c.pushesSent + c.pushFailures >= 2);
    expect(counts.pushesSent).toBe(2);
    expect(received.map((r) => r.auth)).toEqual(['Bearer hook-secret', 'Bearer hook-secret']);
    const created = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'second',
      taskId: task.id,
      url: `${hook}/2`,
      token: '',
      authentication: undefined,
    } as never);
    expect([created.id, created.taskId, created.url]).toEqual(['second', task.id, `${hook}/2`]);
    const got = await client.getTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      id: 'second',
    } as never);
    expect(got.url).toBe(`${hook}/2`);
    await client.deleteTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      id: 'second',
    } as never);
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    } as never);
    expect(listed.configs.map((c) => [c.url, c.token])).toEqual([[hook, 'tok']]);
  });

  it('answers the gRPC tenant and an unknown task in the SDK shapes', async () => {
    const agent = await agentWith({ taskSeconds: 0, grpc: true });
    const client = await clientFor(agent, 'GRPC');
    const task = (await client.sendMessage({
      tenant: 'acme',
      message: message('g-1'),
    } as never)) as Task;
    expect(task.status?.state).toBe(3);
    const listed = await client.listTasks({
      tenant: '',
      contextId: '',
      status: 0,
      pageToken: '',
    } as never);
    expect(listed.tasks.map((t) => t.id)).toEqual([task.id]);
    await expect(client.getTask({ id: 'nope' } as never)).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
  });
});
