/**
 * Leases, deduplication, overload, the in-task limit helper, metrics and the card extension,
 * against the real SDK server on all three bindings with a ManualClock.
 */

import type { MemoryStore, Policy } from 'a2a-ratelimit';
import { RATE_LIMIT_EXTENSION_URI } from 'a2a-ratelimit/server';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { as, MOUNTS, startAgent, type TestAgent, userMessage } from './server-agent.helpers.js';

let agent: TestAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

const tasks: Policy = {
  name: 'tasks-per-caller',
  kind: 'concurrency',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  max: 1,
};

function jsonRpc(
  url: string,
  method: string,
  params: unknown,
  caller: string,
  signal?: AbortSignal,
) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'a2a-version': '1.0',
      authorization: `Bearer ${caller}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    ...(signal === undefined ? {} : { signal }),
  });
}
const raw = (messageId: string, text = 'task') => ({
  messageId,
  role: 'ROLE_USER',
  parts: [{ text }],
});

describe('task leases', () => {
  it('live from admission to a terminal state: completing, failing or canceling releases', async () => {
    agent = await startAgent({ policies: [tasks] });
    const client = await agent.client('GRPC');
    await client.sendMessage({ message: userMessage('done-1'), tenant: '' } as never, as('a'));
    expect(agent.limiter.leasesHeld()).toBe(0);
    await client.sendMessage(
      { message: userMessage('fail-1', 'fail'), tenant: '' } as never,
      as('a'),
    );
    expect(agent.limiter.leasesHeld()).toBe(0);
    // A held task keeps its lease after its stream is gone; a second task is refused meanwhile.
    let taskId = '';
    for await (const e of client.sendMessageStream(
      { message: userMessage('hold-1', 'hold'), tenant: '' } as never,
      as('a'),
    )) {
      taskId = (e as { payload?: { value?: { id?: string } } }).payload?.value?.id ?? '';
      break;
    }
    await vi.waitFor(() => expect(agent?.limiter.tasksTracked()).toBe(1));
    expect(agent.limiter.leasesHeld()).toBe(1);
    const refused = await jsonRpc(agent.jsonRpcUrl, 'SendMessage', { message: raw('x-1') }, 'a');
    const body = (await refused.json()) as {
      error?: { data: { retryDelay?: string; metadata?: { policy: string } }[] };
    };
    expect(body.error?.data[0]?.metadata?.policy).toBe('tasks-per-caller');
    expect(body.error?.data[1]?.retryDelay).toMatch(/^[1-9]\d*s$/);
    await client.cancelTask({ id: taskId, tenant: '' } as never, as('a'));
    await vi.waitFor(() => expect(agent?.limiter.leasesHeld()).toBe(0));
    expect((agent.limiter.store as MemoryStore).stats().leases).toBe(0);
    // Interrupted (INPUT_REQUIRED) releases by default.
    await client.sendMessage(
      { message: userMessage('input-1', 'input'), tenant: '' } as never,
      as('a'),
    );
    expect(agent.limiter.leasesHeld()).toBe(0);
  });

  it('keeps the lease through INPUT_REQUIRED when asked, and an abandoned lease expires by TTL', async () => {
    agent = await startAgent({
      policies: [tasks],
      limiter: { leases: { releaseOnInterrupted: false } },
    });
    const client = await agent.client('HTTP+JSON');
    await client.sendMessage(
      { message: userMessage('in-1', 'input'), tenant: '' } as never,
      as('b'),
    );
    expect(agent.limiter.leasesHeld()).toBe(1);
    await expect(
      client.sendMessage({ message: userMessage('in-2'), tenant: '' } as never, as('b')),
    ).rejects.toBeDefined();
    agent.clock.advance(600_001);
    await client.sendMessage({ message: userMessage('in-3'), tenant: '' } as never, as('b'));
    expect(agent.executions.has('in-3')).toBe(true);
  });

  it('10,000 streams opened and aborted by the client leave no lease', async () => {
    agent = await startAgent({
      policies: [
        {
          name: 'open-streams',
          kind: 'concurrency',
          scope: 'caller',
          methods: ['SubscribeToTask', 'SendStreamingMessage'],
          max: 100_000,
        },
      ],
      limiter: { leases: { holdUntil: { 'open-streams': 'response' } }, dedup: false },
    });
    const created = await jsonRpc(
      agent.jsonRpcUrl,
      'SendMessage',
      { message: raw('held', 'hold'), configuration: { returnImmediately: true } },
      'c',
    );
    const taskId = ((await created.json()) as { result: { task: { id: string } } }).result.task.id;
    const grpcClient = await agent.client('GRPC');
    let opened = 0;
    const openAndAbort = async (binding: 'jsonrpc' | 'rest' | 'grpc') => {
      const ac = new AbortController();
      if (binding === 'grpc') {
        const it = grpcClient
          .resubscribeTask({ id: taskId, tenant: '' } as never, as('c', ac.signal))
          [Symbol.asyncIterator]();
        await it.next();
        opened++;
        ac.abort();
        await it.next().catch(() => undefined);
        return;
      }
      const res =
        binding === 'jsonrpc'
          ? await jsonRpc(
              agent?.jsonRpcUrl as string,
              'SubscribeToTask',
              { id: taskId },
              'c',
              ac.signal,
            )
          : await fetch(`${agent?.restUrl}/tasks/${taskId}:subscribe`, {
              headers: { 'a2a-version': '1.0', authorization: 'Bearer c' },
              signal: ac.signal,
            });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const reader = res.body?.getReader();
      await reader?.read();
      opened++;
      ac.abort();
      await reader?.cancel().catch(() => undefined);
    };
    const plan: ('jsonrpc' | 'rest' | 'grpc')[] = [];
    for (let i = 0; i < 10_002; i++)
      plan.push((['jsonrpc', 'rest', 'grpc'] as const)[i % 3] as 'jsonrpc');
    for (let i = 0; i < plan.length; i += 100) {
      await Promise.all(plan.slice(i, i + 100).map(openAndAbort));
    }
    expect(opened).toBe(10_002);
    await vi.waitFor(() => expect(agent?.limiter.leasesHeld()).toBe(0), { timeout: 10_000 });
    expect((agent.limiter.store as MemoryStore).stats().leases).toBe(0);
    agent.releaseHeld();
    // 10,002 streams through three bindings: ~30 s on a quiet 2-core machine, twice that when
    // another test file runs beside it; the bound is for a hang, not for speed.
  }, 180_000);
});

describe.each(MOUNTS)('%s mount', (mount) => {
  describe('deduplication', () => {
    it('the same SendMessage sent twice after a lost response runs once and is not charged again', async () => {
      agent = await startAgent({
        mount,
        policies: [
          {
            name: 'per-caller',
            kind: 'rate',
            scope: 'caller',
            methods: ['SendMessage', 'SendStreamingMessage'],
            limit: 1,
            windowSeconds: 60,
            burst: 1,
          },
        ],
      });
      for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const) {
        const caller = `d-${binding}`;
        // The first copy's response is lost: the client aborts while the task is still running.
        const ac = new AbortController();
        const lost = jsonRpc(
          agent.jsonRpcUrl,
          'SendMessage',
          { message: raw(`dup-${binding}`, 'hold') },
          caller,
          ac.signal,
        );
        await vi.waitFor(() => expect(agent?.executions.get(`dup-${binding}`)).toBe(1));
        ac.abort();
        await lost.catch(() => undefined);
        agent.releaseHeld();
        const client = await agent.client(binding);
        const task = (await client.sendMessage(
          { message: userMessage(`dup-${binding}`, 'hold'), tenant: '' } as never,
          as(caller),
        )) as { id: string; status?: { state?: number } };
        expect(task.id).toMatch(/[0-9a-f-]{36}/);
        expect(task.status?.state).toBe(3);
        expect(agent.executions.get(`dup-${binding}`)).toBe(1);
        // A streamed copy of the finished task gets its final snapshot as the one event.
        const events: unknown[] = [];
        for await (const e of client.sendMessageStream(
          { message: userMessage(`dup-${binding}`, 'hold'), tenant: '' } as never,
          as(caller),
        ))
          events.push(e);
        expect(events).toHaveLength(1);
        expect((events[0] as { payload: { value: { id: string } } }).payload.value.id).toBe(
          task.id,
        );
        expect(agent.executions.get(`dup-${binding}`)).toBe(1);
        // Still within the limit's one token: a new message is refused, so the copies were not charged… and a new one after that is.
        await expect(
          client.sendMessage(
            { message: userMessage(`new-${binding}`), tenant: '' } as never,
            as(caller),
          ),
        ).rejects.toBeDefined();
      }
    });

    it('a message the SDK refused before running anything (unknown task) is not remembered as processed', async () => {
      agent = await startAgent({ mount, policies: [] });
      const followUp = { ...raw('orphan-1'), taskId: 'no-such-task' };
      for (let copy = 0; copy < 2; copy++) {
        const res = await jsonRpc(agent.jsonRpcUrl, 'SendMessage', { message: followUp }, 'o');
        const body = (await res.json()) as { error?: { code: number; message: string } };
        // Both copies reach the SDK and get its own answer (task not found), not a dedup answer.
        expect(body.error?.code).toBe(-32001);
      }
      expect(agent.executions.get('orphan-1')).toBeUndefined();
      // A message that did run stays deduplicated.
      const ok = await jsonRpc(agent.jsonRpcUrl, 'SendMessage', { message: raw('ran-1') }, 'o');
      const first = (await ok.json()) as { result?: { task?: { id: string } } };
      const again = await jsonRpc(agent.jsonRpcUrl, 'SendMessage', { message: raw('ran-1') }, 'o');
      const second = (await again.json()) as { result?: { task?: { id: string } } };
      expect(second.result?.task?.id).toBe(first.result?.task?.id);
      expect(agent.executions.get('ran-1')).toBe(1);
    });

    it('a copy of a still-running streamed message resubscribes instead of starting again', async () => {
      agent = await startAgent({ mount, policies: [] });
      const client = await agent.client('HTTP+JSON');
      let taskId = '';
      for await (const e of client.sendMessageStream(
        { message: userMessage('s-dup', 'hold'), tenant: '' } as never,
        as('s'),
      )) {
        taskId = (e as { payload: { value: { id: string } } }).payload.value.id;
        break;
      }
      const again = client
        .sendMessageStream({ message: userMessage('s-dup', 'hold'), tenant: '' } as never, as('s'))
        [Symbol.asyncIterator]();
      const first = await again.next();
      expect((first.value as { payload: { value: { id: string } } }).payload.value.id).toBe(taskId);
      agent.releaseHeld();
      const rest: { payload: { $case: string; value: { status?: { state?: number } } } }[] = [];
      for (let next = await again.next(); !next.done; next = await again.next())
        rest.push(next.value as never);
      expect(rest.at(-1)?.payload.value.status?.state).toBe(3);
      expect(agent.executions.get('s-dup')).toBe(1);
    });
  });
});

describe('overload', () => {
  it('answers 503 / UNAVAILABLE AGENT_OVERLOADED from the event-loop delay, with a delay of at least 1 s', async () => {
    let lagMs = 0;
    agent = await startAgent({
      policies: [
        { name: 'agent-overload', kind: 'overload', maxEventLoopDelayMs: 100, maxInFlight: 1000 },
      ],
      limiter: { eventLoopDelay: () => lagMs },
    });
    const ok = await jsonRpc(agent.jsonRpcUrl, 'GetTask', { id: 'nope' }, 'o');
    expect(((await ok.json()) as { error: { code: number } }).error.code).toBe(-32001);
    lagMs = 900;
    const rest = await fetch(`${agent.restUrl}/tasks/nope`, { headers: { 'a2a-version': '1.0' } });
    expect(rest.status).toBe(503);
    expect(rest.headers.get('retry-after')).toBe('2');
    const body = (await rest.json()) as {
      error: { status: string; details: { reason?: string }[] };
    };
    expect(body.error.status).toBe('UNAVAILABLE');
    expect(body.error.details[0]?.reason).toBe('AGENT_OVERLOADED');
    expect(body.error.details).toHaveLength(2);
    const client = await agent.client('GRPC');
    const error = await client
      .getTask({ id: 'nope', tenant: '' } as never, as('o'))
      .catch((e: unknown) => e);
    expect((error as { cause?: { code?: number } }).cause?.code).toBe(14);
  });
});

describe('inside a task', () => {
  it('the limit helper reports waiting, then ends a streamed task FAILED with a reason', async () => {
    agent = await startAgent({ policies: [] });
    for (const binding of ['JSONRPC', 'GRPC'] as const) {
      const client = await agent.client(binding);
      const events: {
        payload: {
          $case: string;
          value: {
            status?: { state?: number; message?: { parts: { content: { value: string } }[] } };
          };
        };
      }[] = [];
      for await (const e of client.sendMessageStream(
        { message: userMessage(`lim-${binding}`, 'limited'), tenant: '' } as never,
        as('l'),
      ))
        events.push(e as never);
      const texts = events
        .map((e) => e.payload.value.status?.message?.parts[0]?.content.value)
        .filter((t): t is string => t !== undefined);
      expect(texts.filter((t) => t.startsWith('Waiting 3 s for model provider'))).toHaveLength(2);
      const last = events.at(-1);
      expect(last?.payload.$case).toBe('statusUpdate');
      expect(last?.payload.value.status?.state).toBe(4);
      expect(texts.at(-1)).toMatch(/^Gave up on model provider after 3 attempts: still limited/);
    }
  });
});

describe('operating it', () => {
  it('serves metrics and the card extension matching the configured policies', async () => {
    const perCaller: Policy = {
      name: 'per-caller',
      kind: 'rate',
      scope: 'caller',
      methods: ['SendMessage'],
      limit: 1,
      windowSeconds: 60,
      burst: 1,
    };
    agent = await startAgent({ policies: [perCaller, tasks], metrics: true });
    const client = await agent.client('JSONRPC');
    for (const caller of ['alice', 'bob', 'carol', 'dave', 'erin']) {
      await client.sendMessage(
        { message: userMessage(`m-${caller}-1`), tenant: '' } as never,
        as(caller),
      );
      await expect(
        client.sendMessage(
          { message: userMessage(`m-${caller}-2`), tenant: '' } as never,
          as(caller),
        ),
      ).rejects.toBeDefined();
    }
    await expect(
      client.sendMessage({ message: userMessage('m-alice-3'), tenant: '' } as never, as('alice')),
    ).rejects.toBeDefined();
    const text = await (await fetch(`${agent.baseUrl}/metrics`)).text();
    expect(text).toContain(
      'a2a_ratelimit_rejections_total{reason="RATE_LIMIT_EXCEEDED",policy="per-caller",method="SendMessage",binding="jsonrpc",caller="alice"} 2',
    );
    expect(text).toContain('caller="carol"} 1');
    expect(text).toContain(
      'a2a_ratelimit_rejections_total{reason="RATE_LIMIT_EXCEEDED",policy="per-caller",method="SendMessage",binding="jsonrpc",caller="other"} 2',
    );
    expect(text).toContain('a2a_ratelimit_holds_total{event="made",policy="per-caller"} 5');
    expect(text).toContain(
      'a2a_ratelimit_retry_delay_seconds_count{reason="RATE_LIMIT_EXCEEDED",policy="per-caller"} 6',
    );
    expect(text).toContain('a2a_ratelimit_leases_held 0');
    expect(text).toMatch(
      /a2a_ratelimit_admissions_total\{method="SendMessage",binding="jsonrpc",policy="per-caller"\} 5/,
    );

    const card = (await (await fetch(`${agent.baseUrl}/.well-known/agent-card.json`)).json()) as {
      capabilities: {
        extensions: {
          uri: string;
          params: { policies: { name: string }[]; deduplicatesMessageIds: boolean };
        }[];
      };
    };
    const ext = card.capabilities.extensions.find((e) => e.uri === RATE_LIMIT_EXTENSION_URI);
    expect(ext?.params.deduplicatesMessageIds).toBe(true);
    expect(ext?.params.policies).toEqual([
      {
        name: 'per-caller',
        kind: 'rate',
        scope: 'caller',
        methods: ['SendMessage'],
        rejectAs: 'quota',
        limit: 1,
        windowSeconds: 60,
        burst: 1,
      },
      {
        name: 'tasks-per-caller',
        kind: 'concurrency',
        scope: 'caller',
        methods: ['SendMessage', 'SendStreamingMessage'],
        rejectAs: 'quota',
        max: 1,
      },
    ]);
    const extended = (await client.getAgentCard(as('alice'))) as unknown as typeof card & {
      description: string;
    };
    expect(extended.description).toBe('extended for alice');
    expect(
      extended.capabilities.extensions.find((e) => e.uri === RATE_LIMIT_EXTENSION_URI)?.params,
    ).toEqual(ext?.params);
  });
});
