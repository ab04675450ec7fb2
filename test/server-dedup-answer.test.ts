/**
 * A resent message whose first copy was answered with a Message (the README quick start's
 * executor: no task) gets that same Message again, end to end: the real SDK server on all three
 * bindings behind our admission, the SDK's own clients, SendMessage and SendStreamingMessage (a
 * streamed copy gets a stream of that one Message), on a `MemoryStore` (in-process path) and on a
 * real Redis shared by two limiter replicas (shared path: the first copy on one replica, its
 * copies on the other). The executor runs once per (caller, messageId): the same messageId from
 * another caller is another message and runs. A copy while the first is still running gets the
 * retryable MESSAGE_IN_PROGRESS; an answer over `dedup.answers.maxBytes` is not kept, and its copy
 * gets the documented "processed without a task" answer (JSON-RPC -32600, REST 409
 * ALREADY_EXISTS, gRPC ALREADY_EXISTS) — never a second run.
 */

import { Message, type Task } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor } from '@a2a-js/sdk/server';
import type { Policy } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import type { LimiterOptions } from 'a2a-ratelimit/server';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  connectRedis,
  deletePrefix,
  probeRedis,
  REDIS_URL,
  requireOrSkip,
  runPrefix,
} from './fixtures/redis/redis-env.js';
import { as, startAgent, type TestAgent, userMessage } from './server-agent.helpers.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const POLICIES: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage', 'SendStreamingMessage'],
    limit: 600,
    windowSeconds: 60,
    burst: 100,
  },
];
const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const;
/** Polls until the value holds (a replica's write lands behind its response): counts, not time. */
const POLL = { timeout: 20_000, interval: 50 };

/**
 * The README quick start's executor ("answers every message with one reply": a Message with a
 * fresh UUID, no task), counting its runs per messageId; a message whose text is `wait` is
 * answered only once `release()` is called.
 */
function quickStartExecutor() {
  const runs = new Map<string, number>();
  const waiting: (() => void)[] = [];
  const executor: AgentExecutor = {
    async execute(context, bus) {
      const id = context.userMessage.messageId;
      runs.set(id, (runs.get(id) ?? 0) + 1);
      const part = context.userMessage.parts[0]?.content;
      if (part?.$case === 'text' && part.value === 'wait') {
        await new Promise<void>((resolve) => waiting.push(resolve));
      }
      bus.publish(
        AgentEvent.message(
          Message.fromJSON({
            messageId: crypto.randomUUID(),
            role: 'ROLE_AGENT',
            contextId: context.contextId,
            parts: [{ text: 'on it' }],
          }),
        ),
      );
      bus.finished();
    },
    async cancelTask() {},
  };
  return {
    executor,
    runs: (messageId: string) => runs.get(messageId) ?? 0,
    waiting: () => waiting.length,
    release: () => {
      for (const resolve of waiting.splice(0)) resolve();
    },
  };
}

type Binding = (typeof BINDINGS)[number];
type Client = Awaited<ReturnType<TestAgent['client']>>;

/** The first agent takes first copies; copies go to the second (the same one in memory). */
interface Replicas {
  readonly first: TestAgent;
  readonly copies: TestAgent;
}

let redis: Redis | undefined;
const prefixes: string[] = [];
const agents: TestAgent[] = [];
beforeAll(async () => {
  if (redisUp) redis = await connectRedis();
});
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});
afterAll(async () => {
  if (redis === undefined) return;
  for (const prefix of prefixes) await deletePrefix(redis, prefix);
  redis.disconnect();
});

type StoreKind = 'memory' | 'redis';

/** One agent on a MemoryStore, or two replicas sharing a Redis prefix of their own. */
async function replicas(
  kind: StoreKind,
  executor: AgentExecutor,
  dedup: LimiterOptions['dedup'] = {},
): Promise<Replicas> {
  if (kind === 'memory') {
    const agent = await startAgent({ policies: POLICIES, executor, limiter: { dedup } });
    agents.push(agent);
    return { first: agent, copies: agent };
  }
  const prefix = runPrefix('dedup-answer');
  prefixes.push(prefix);
  const replica = async () => {
    const store = new RedisStore({
      client: redis as Redis,
      policies: POLICIES,
      keyPrefix: prefix,
      onError: 'fail-closed',
      timeoutMs: 2_000,
      policyPollIntervalMs: false,
      logger: false,
    });
    const agent = await startAgent({ policies: [], executor, limiter: { store, dedup } });
    agents.push(agent);
    return agent;
  };
  return { first: await replica(), copies: await replica() };
}

function isMessage(result: unknown): result is Message {
  return typeof result === 'object' && result !== null && 'messageId' in result;
}

/** A SendMessage answer that must be a Message, in the SDK's JSON form. */
function messageOf(result: Message | Task): Record<string, unknown> {
  if (!isMessage(result)) throw new Error(`not a Message: ${JSON.stringify(result)}`);
  return Message.toJSON(result) as Record<string, unknown>;
}

/** Every event of a streamed call, as `$case` and the Message's JSON form. */
async function streamOf(client: Client, messageId: string, caller: string) {
  const events: { kind: string; message?: unknown }[] = [];
  for await (const e of client.sendMessageStream(
    { message: userMessage(messageId, 'hi'), tenant: '' } as never,
    as(caller),
  )) {
    const payload = (e as { payload?: { $case: string; value: unknown } }).payload;
    events.push(
      payload?.$case === 'message'
        ? { kind: 'message', message: Message.toJSON(payload.value as Message) }
        : { kind: payload?.$case ?? 'none' },
    );
  }
  return events;
}

/**
 * The first copy sent after an answer: on Redis the first replica writes the answer right behind
 * it, so a copy that comes too early is told MESSAGE_IN_PROGRESS (retry in 1 s): retried, as a
 * client does, until it is answered.
 */
function firstCopy<T>(call: () => Promise<T>) {
  return expect.poll(async () => {
    try {
      return await call();
    } catch (error) {
      return String(error);
    }
  }, POLL);
}

async function send(client: Client, messageId: string, caller: string, text = 'hi') {
  return client.sendMessage(
    { message: userMessage(messageId, text), tenant: '' } as never,
    as(caller),
  );
}

describe.each<StoreKind>(['memory', 'redis'])('%s store', (kind) => {
  it.each(BINDINGS)(
    '%s: a copy gets the first Message again; the executor ran once',
    async (binding: Binding) => {
      const quick = quickStartExecutor();
      const { first, copies } = await replicas(kind, quick.executor);
      const a = await first.client(binding);
      const b = await copies.client(binding);
      const id = `m-${kind}-${binding}`;

      const reply = messageOf(await send(a, id, 'alice'));
      expect(reply).toMatchObject({ role: 'ROLE_AGENT', parts: [{ text: 'on it' }] });
      expect(reply.messageId).toMatch(/^[0-9a-f-]{36}$/);

      // The copy — SendMessage, then SendStreamingMessage — gets that very Message (its UUID too).
      await firstCopy(async () => messageOf(await send(b, id, 'alice'))).toEqual(reply);
      expect(messageOf(await send(b, id, 'alice'))).toEqual(reply);
      expect(await streamOf(b, id, 'alice')).toEqual([{ kind: 'message', message: reply }]);
      expect(quick.runs(id)).toBe(1);

      // A first copy streamed: its copies get the streamed Message, on either method.
      const streamed = `s-${kind}-${binding}`;
      const events = await streamOf(a, streamed, 'alice');
      expect(events).toHaveLength(1);
      const streamedReply = events[0]?.message as Record<string, unknown>;
      expect(streamedReply.messageId).not.toBe(reply.messageId);
      await firstCopy(async () => messageOf(await send(b, streamed, 'alice'))).toEqual(
        streamedReply,
      );
      expect(await streamOf(b, streamed, 'alice')).toEqual(events);
      expect(quick.runs(streamed)).toBe(1);

      // The same messageId from another caller is another message: it runs, with its own reply.
      const other = messageOf(await send(b, id, 'bob'));
      expect(other.messageId).not.toBe(reply.messageId);
      expect(quick.runs(id)).toBe(2);
      await firstCopy(async () => messageOf(await send(a, id, 'bob'))).toEqual(other);
      expect(messageOf(await send(a, id, 'alice'))).toEqual(reply);
      expect(quick.runs(id)).toBe(2);
    },
  );

  it('a copy on another binding gets the same Message (the scope is the same user on every binding)', async () => {
    const quick = quickStartExecutor();
    const { first, copies } = await replicas(kind, quick.executor);
    const id = `x-${kind}`;
    const reply = messageOf(await send(await first.client('JSONRPC'), id, 'alice'));
    for (const binding of BINDINGS) {
      const client = await copies.client(binding);
      await firstCopy(async () => messageOf(await send(client, id, 'alice'))).toEqual(reply);
      expect(await streamOf(client, id, 'alice')).toEqual([{ kind: 'message', message: reply }]);
    }
    expect(quick.runs(id)).toBe(1);
  });

  it('a copy while the first still runs: retryable MESSAGE_IN_PROGRESS; after its answer, the Message', async () => {
    const quick = quickStartExecutor();
    const { first, copies } = await replicas(kind, quick.executor, { waitForTaskMs: 50 });
    const a = await first.client('JSONRPC');
    const pending = send(a, `w-${kind}`, 'alice', 'wait');
    await expect.poll(() => quick.waiting(), POLL).toBe(1);
    const copy = await fetch(`${copies.restUrl}/message:send`, {
      method: 'POST',
      headers: {
        'a2a-version': '1.0',
        'content-type': 'application/a2a+json',
        authorization: 'Bearer alice',
      },
      body: JSON.stringify({
        message: { messageId: `w-${kind}`, role: 'ROLE_USER', parts: [{ text: 'wait' }] },
      }),
    });
    expect(copy.status).toBe(503);
    const body = (await copy.json()) as { error: { details: { reason?: string }[] } };
    expect(body.error.details.map((d) => d.reason)).toContain('MESSAGE_IN_PROGRESS');
    quick.release();
    const reply = messageOf(await pending);
    const b = await copies.client('HTTP+JSON');
    // On Redis the first replica writes the answer behind its response: retry as told.
    await expect
      .poll(async () => {
        try {
          return messageOf(await send(b, `w-${kind}`, 'alice', 'wait'));
        } catch {
          return undefined;
        }
      })
      .toEqual(reply);
    expect(quick.runs(`w-${kind}`)).toBe(1);
  });

  it('an answer over maxBytes is not kept: its copy gets the documented "no task" answer on each binding, and does not run', async () => {
    const quick = quickStartExecutor();
    const { first, copies } = await replicas(kind, quick.executor, { answers: { maxBytes: 64 } });
    const jsonRpc = async (messageId: string) => {
      const res = await fetch(copies.jsonRpcUrl, {
        method: 'POST',
        headers: {
          'a2a-version': '1.0',
          'content-type': 'application/json',
          authorization: 'Bearer alice',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'SendMessage',
          params: { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
        }),
      });
      return (await res.json()) as { error?: { code: number; message: string } };
    };
    const rest = async (messageId: string) => {
      const res = await fetch(`${copies.restUrl}/message:send`, {
        method: 'POST',
        headers: {
          'a2a-version': '1.0',
          'content-type': 'application/a2a+json',
          authorization: 'Bearer alice',
        },
        body: JSON.stringify({
          message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
        }),
      });
      return { status: res.status, body: (await res.json()) as { error?: { status: string } } };
    };
    const a = await first.client('JSONRPC');
    for (const binding of BINDINGS) {
      const id = `big-${kind}-${binding}`;
      messageOf(await send(a, id, 'alice'));
      if (binding === 'JSONRPC') {
        await expect.poll(async () => (await jsonRpc(id)).error?.code, POLL).toBe(-32600);
        expect((await jsonRpc(id)).error?.message).toContain('not run again');
      } else if (binding === 'HTTP+JSON') {
        await expect.poll(async () => (await rest(id)).status, POLL).toBe(409);
        expect((await rest(id)).body.error?.status).toBe('ALREADY_EXISTS');
      } else {
        const b = await copies.client('GRPC');
        await expect
          .poll(async () => {
            try {
              await send(b, id, 'alice');
              return 'answered';
            } catch (error) {
              return String((error as Error).message);
            }
          }, POLL)
          .toContain('not run again');
      }
      expect(quick.runs(id)).toBe(1);
    }
  });
});
