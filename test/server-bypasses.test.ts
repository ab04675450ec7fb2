/**
 * The four ways around the limiter found by attacking `serve` and the README's agent, as
 * regression tests against the real SDK server (each mount): REST path case, HEAD, JSON-RPC path
 * variants, and resubscriptions by replay opening streams past the limit. Also: every answer
 * under the mounted paths is JSON in the binding's format (body-parser errors, malformed
 * escapes, unknown paths and verbs), with no stack or file path.
 */

import { gzipSync } from 'node:zlib';
import type { Policy } from 'a2a-ratelimit';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { as, MOUNTS, startAgent, type TestAgent, userMessage } from './server-agent.helpers.js';

let agent: TestAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

const ONE_EACH: Policy = {
  name: 'one-each',
  kind: 'rate',
  scope: 'caller',
  limit: 1,
  windowSeconds: 3600,
  burst: 1,
};

const V1 = { 'a2a-version': '1.0' };
const json = { 'content-type': 'application/json', ...V1 };
const sendBody = (messageId: string, text = 'task') =>
  JSON.stringify({ message: { messageId, role: 'ROLE_USER', parts: [{ text }] } });
const rpcBody = (method: string, params: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

/** Starts an agent with one request per caller, and a task made by `owner`. */
async function spentSetup(
  mount: (typeof MOUNTS)[number],
): Promise<{ a: TestAgent; taskId: string }> {
  const a = await startAgent({ policies: [ONE_EACH], mount });
  const made = await fetch(`${a.restUrl}/message:send`, {
    method: 'POST',
    headers: { ...json, authorization: 'Bearer owner' },
    body: sendBody('seed'),
  });
  const taskId = ((await made.json()) as { task: { id: string } }).task.id;
  return { a, taskId };
}

describe.each(MOUNTS)('bypasses found by attack, closed (%s mount)', (mount) => {
  it('1. REST path case: Message:Send, MESSAGE:SEND, /acme/Message:Send, Message:Stream and TASKS/{id} are limited', async () => {
    const { a, taskId } = await spentSetup(mount);
    agent = a;
    const headers = { ...json, authorization: 'Bearer owner' }; // owner has spent its request
    const before = a.handlerCalls.length;
    for (const path of [
      '/Message:Send',
      '/MESSAGE:SEND',
      '/acme/Message:Send',
      '/Message:Stream',
    ]) {
      const res = await fetch(`${a.restUrl}${path}`, {
        method: 'POST',
        headers,
        body: sendBody(`case-${path}`),
      });
      expect(res.status, path).toBe(429);
    }
    const get = await fetch(`${a.restUrl}/TASKS/${taskId}`, { headers });
    expect(get.status).toBe(429);
    expect(a.handlerCalls.length).toBe(before);
    expect(a.executionCount()).toBe(1);
  });

  it('2. HEAD is decided as the GET it runs: tasks, tasks/{id}, :subscribe, extendedAgentCard, push configs', async () => {
    const { a, taskId } = await spentSetup(mount);
    agent = a;
    const headers = { ...V1, authorization: 'Bearer owner' };
    const before = a.handlerCalls.length;
    for (const path of [
      '/tasks',
      `/tasks/${taskId}`,
      `/tasks/${taskId}:subscribe`,
      '/extendedAgentCard',
      `/tasks/${taskId}/pushNotificationConfigs`,
      `/tasks/${taskId}/pushNotificationConfigs/c-1`,
    ]) {
      const res = await fetch(`${a.restUrl}${path}`, { method: 'HEAD', headers });
      expect(res.status, path).toBe(429);
      expect(res.headers.get('retry-after'), path).toBe('3600');
    }
    expect(a.handlerCalls.length).toBe(before);
    // A caller with its request left: HEAD is admitted and served as GET.
    const fresh = await fetch(`${a.restUrl}/tasks`, {
      method: 'HEAD',
      headers: { ...V1, authorization: 'Bearer fresh' },
    });
    expect(fresh.status).toBe(200);
    expect(a.handlerCalls.at(-1)).toBe('listTasks');
  });

  it('3. JSON-RPC at // and //?x=1 is decided', async () => {
    const { a } = await spentSetup(mount);
    agent = a;
    const before = a.handlerCalls.length;
    for (const path of ['//', '//?x=1', '/?x=1', '']) {
      const res = await fetch(`${a.jsonRpcUrl}${path}`, {
        method: 'POST',
        headers: { ...json, authorization: 'Bearer owner' },
        body: rpcBody('SendMessage', {
          message: { messageId: `p-${path}`, role: 'ROLE_USER', parts: [{ text: 'task' }] },
        }),
      });
      const body = (await res.json()) as { error?: { code: number; data?: { reason?: string }[] } };
      expect(body.error?.code, path).toBe(-32603);
      expect(body.error?.data?.[0]?.reason, path).toBe('RATE_LIMIT_EXCEEDED');
    }
    expect(a.handlerCalls.length).toBe(before);
    expect(a.executionCount()).toBe(1);
  });

  describe.each([
    ['both stream methods', ['SendStreamingMessage', 'SubscribeToTask']],
    ['SendStreamingMessage only', ['SendStreamingMessage']],
  ] as const)('4. replay cannot open streams past the limit (policy on %s)', (_label, methods) => {
    it('15 re-sends of a running streamed message while 2 of 2 streams are open: all refused', async () => {
      agent = await startAgent({
        mount,
        policies: [
          {
            name: 'open-streams',
            kind: 'concurrency',
            scope: 'caller',
            methods: [...methods],
            max: 2,
          },
        ],
        limiter: { leases: { holdUntil: { 'open-streams': 'response' } } },
      });
      const a = agent;
      const headers = { ...json, authorization: 'Bearer s' };
      const open: AbortController[] = [];
      const openStream = async (messageId: string) => {
        const ac = new AbortController();
        const res = await fetch(`${a.restUrl}/message:stream`, {
          method: 'POST',
          headers,
          body: sendBody(messageId, 'hold'),
          signal: ac.signal,
        });
        expect(res.headers.get('content-type')).toContain('text/event-stream');
        await res.body?.getReader().read();
        open.push(ac);
      };
      await openStream('long-1');
      await openStream('long-2');
      expect(a.limiter.leasesHeld()).toBe(2);
      const refusals: number[] = [];
      for (let i = 0; i < 15; i++) {
        const res =
          i % 2 === 0
            ? await fetch(`${a.restUrl}/message:stream`, {
                method: 'POST',
                headers,
                body: sendBody('long-1', 'hold'),
              })
            : await fetch(a.jsonRpcUrl, {
                method: 'POST',
                headers,
                body: rpcBody('SendStreamingMessage', {
                  message: { messageId: 'long-1', role: 'ROLE_USER', parts: [{ text: 'hold' }] },
                }),
              });
        const text = await res.text();
        refusals.push(res.status === 429 || text.includes('RATE_LIMIT_EXCEEDED') ? 1 : 0);
      }
      expect(refusals.reduce((x, y) => x + y, 0)).toBe(15);
      expect(a.limiter.leasesHeld()).toBe(2);
      expect(a.handlerCalls.filter((c) => c === 'resubscribe')).toHaveLength(0);
      expect(a.executions.get('long-1')).toBe(1);
      // A stream closes: a replay now resubscribes (a live stream of the running task).
      open.pop()?.abort();
      // Its lease ends when the server sees the stream closed (however long a loaded machine takes).
      await expect.poll(() => a.limiter.leasesHeld(), { timeout: 10_000 }).toBe(1);
      const ac = new AbortController();
      const replay = await fetch(`${a.restUrl}/message:stream`, {
        method: 'POST',
        headers,
        body: sendBody('long-1', 'hold'),
        signal: ac.signal,
      });
      expect(replay.headers.get('content-type')).toContain('text/event-stream');
      await replay.body?.getReader().read();
      expect(a.handlerCalls.filter((c) => c === 'resubscribe')).toHaveLength(1);
      expect(a.limiter.leasesHeld()).toBe(2);
      ac.abort();
      for (const c of open) c.abort();
    });

    it('gRPC: re-sends of a running streamed message past the stream limit are refused', async () => {
      agent = await startAgent({
        mount,
        policies: [
          {
            name: 'open-streams',
            kind: 'concurrency',
            scope: 'caller',
            methods: [...methods],
            max: 2,
          },
        ],
        limiter: { leases: { holdUntil: { 'open-streams': 'response' } } },
      });
      const a = agent;
      const client = await a.client('GRPC');
      const open: AbortController[] = [];
      for (const id of ['g-1', 'g-2']) {
        const ac = new AbortController();
        const it = client
          .sendMessageStream(
            { message: userMessage(id, 'hold'), tenant: '' } as never,
            as('g', ac.signal),
          )
          [Symbol.asyncIterator]();
        await it.next();
        open.push(ac);
      }
      expect(a.limiter.leasesHeld()).toBe(2);
      for (let i = 0; i < 5; i++) {
        const it = client
          .sendMessageStream({ message: userMessage('g-1', 'hold'), tenant: '' } as never, as('g'))
          [Symbol.asyncIterator]();
        const error = await it.next().catch((e: unknown) => e);
        expect((error as { cause?: { code?: number } }).cause?.code, `re-send ${i}`).toBe(8);
      }
      expect(a.handlerCalls.filter((c) => c === 'resubscribe')).toHaveLength(0);
      expect(a.limiter.leasesHeld()).toBe(2);
      expect(a.executions.get('g-1')).toBe(1);
      for (const c of open) c.abort();
    });
  });
});

describe.each(MOUNTS)('tenant as the SDK scopes it (%s mount)', (mount) => {
  it('REST: the path tenant is charged; a body or query tenant (which the SDK ignores) is not', async () => {
    agent = await startAgent({
      mount,
      policies: [
        {
          name: 'per-tenant',
          kind: 'rate',
          scope: 'tenant',
          limit: 1,
          windowSeconds: 3600,
          burst: 1,
        },
      ],
    });
    const a = agent;
    const tenants: (string | undefined)[] = [];
    const save = a.taskStore.save.bind(a.taskStore);
    a.taskStore.save = async (task, context) => {
      tenants.push((context as { tenant?: string } | undefined)?.tenant);
      return save(task, context);
    };
    const send = (path: string, extra: Record<string, unknown>) =>
      fetch(`${a.restUrl}${path}`, {
        method: 'POST',
        headers: { ...json, authorization: 'Bearer t' },
        body: JSON.stringify({ ...JSON.parse(sendBody(`t-${Math.random()}`)), ...extra }),
      });
    expect((await send('/beta/message:send', { tenant: 'gamma' })).status).toBe(200);
    expect((await send('/beta/message:send', { tenant: 'delta' })).status).toBe(429);
    // Unprefixed: the default tenant, whatever the body or the query say.
    expect((await send('/message:send', {})).status).toBe(200);
    expect((await send('/message:send', { tenant: 'epsilon' })).status).toBe(429);
    expect((await send('/message:send?tenant=zeta', {})).status).toBe(429);
    expect(new Set(tenants)).toEqual(new Set(['beta', undefined]));
  });

  it('REST: a retry of a message sent with a body tenant gets its task (looked up where it lives)', async () => {
    agent = await startAgent({ mount, policies: [] });
    const a = agent;
    const body = JSON.stringify({ ...JSON.parse(sendBody('retried')), tenant: 'acme' });
    const init = { method: 'POST', headers: { ...json, authorization: 'Bearer r' }, body };
    const first = (await (await fetch(`${a.restUrl}/message:send`, init)).json()) as {
      task: { id: string };
    };
    const retry = await fetch(`${a.restUrl}/message:send`, init);
    expect(retry.status).toBe(200);
    expect(((await retry.json()) as { task?: { id: string } }).task?.id).toBe(first.task.id);
  });

  it.each([
    ['a number', 7],
    ['an array', ['acme']],
    ['true', true],
  ])(
    'JSON-RPC: params.tenant as %s is refused as invalid params; nothing runs',
    async (_l, tenant) => {
      agent = await startAgent({ mount, policies: [] });
      const res = await fetch(agent.jsonRpcUrl, {
        method: 'POST',
        headers: { ...json, authorization: 'Bearer j' },
        body: rpcBody('SendMessage', {
          tenant,
          message: { messageId: 'm-rpc', role: 'ROLE_USER', parts: [{ text: 'task' }] },
        }),
      });
      expect(((await res.json()) as { error?: { code: number } }).error?.code).toBe(-32602);
      expect(agent.handlerCalls).toEqual([]);
    },
  );
});

describe('every answer under the mounts is JSON in the binding format (combined mount)', () => {
  const noLeak = async (res: Response, label: string): Promise<string> => {
    const text = await res.text();
    expect(res.headers.get('content-type') ?? '', label).toMatch(/json/);
    expect(text, label).not.toMatch(/<html|<!DOCTYPE|\n\s+at |node_modules|\/work\//i);
    return text;
  };

  it('REST: body-parser errors, malformed escapes, unknown paths and verbs', async () => {
    agent = await startAgent({ policies: [] });
    const url = agent.restUrl;
    const cases: [string, RequestInit & { path: string }, number][] = [
      [
        '413',
        {
          path: '/message:send',
          method: 'POST',
          headers: json,
          body: `{"a":"${'x'.repeat(200_000)}"}`,
        },
        413,
      ],
      [
        '415 charset',
        {
          path: '/message:send',
          method: 'POST',
          headers: { ...V1, 'content-type': 'application/json; charset=latin9' },
          body: '{}',
        },
        415,
      ],
      [
        'bad gzip',
        {
          path: '/message:send',
          method: 'POST',
          headers: { ...json, 'content-encoding': 'gzip' },
          body: 'not gzip',
        },
        400,
      ],
      [
        'unknown encoding',
        {
          path: '/message:send',
          method: 'POST',
          headers: { ...json, 'content-encoding': 'br2' },
          body: '{}',
        },
        415,
      ],
      ['bad JSON', { path: '/message:send', method: 'POST', headers: json, body: '{"a":' }, 400],
      [
        '%ff tenant',
        { path: '/%ff/message:send', method: 'POST', headers: json, body: sendBody('e1') },
        400,
      ],
      [
        '% tenant',
        { path: '/%/message:send', method: 'POST', headers: json, body: sendBody('e2') },
        400,
      ],
      ['%u0041 tenant', { path: '/%u0041/tasks', method: 'GET', headers: V1 }, 400],
      ['bad task id', { path: '/tasks/%E0%A4%A', method: 'GET', headers: V1 }, 400],
      ['unknown path', { path: '/nothing/here/at/all', method: 'GET', headers: V1 }, 404],
      ['unknown verb', { path: '/tasks', method: 'PUT', headers: json, body: '{}' }, 405],
      [
        'POST on GET route',
        { path: '/extendedAgentCard', method: 'POST', headers: json, body: '{}' },
        405,
      ],
    ];
    for (const [label, init, status] of cases) {
      const res = await fetch(`${url}${init.path}`, init);
      expect(res.status, label).toBe(status);
      const body = JSON.parse(await noLeak(res, label)) as {
        error: { code: number; status: string };
      };
      expect(body.error.code, label).toBe(status);
    }
    const gz = await fetch(`${url}/message:send`, {
      method: 'POST',
      headers: { ...json, 'content-encoding': 'gzip' },
      body: gzipSync(sendBody('gz-1')),
    });
    expect(gz.status).toBe(200); // a valid gzip body is read
    const options = await fetch(`${url}/tasks`, { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });

  it('JSON-RPC: wrong paths and verbs, body-parser errors', async () => {
    agent = await startAgent({ policies: [] });
    const url = agent.jsonRpcUrl;
    for (const [label, path, init, status] of [
      ['deep path', '/x/y', { method: 'POST', headers: json, body: '{}' }, 404],
      ['///', '///', { method: 'POST', headers: json, body: '{}' }, 404],
      ['GET', '/', { method: 'GET', headers: V1 }, 405],
      ['PUT', '/', { method: 'PUT', headers: json, body: '{}' }, 405],
      ['413', '/', { method: 'POST', headers: json, body: `{"a":"${'x'.repeat(200_000)}"}` }, 200],
      [
        'bad gzip',
        '/',
        { method: 'POST', headers: { ...json, 'content-encoding': 'gzip' }, body: 'zz' },
        200,
      ],
      [
        'bad charset',
        '/',
        {
          method: 'POST',
          headers: { ...V1, 'content-type': 'application/json; charset=latin9' },
          body: '{}',
        },
        200,
      ],
    ] as const) {
      const res = await fetch(`${url}${path}`, init);
      expect(res.status, label).toBe(status);
      const body = JSON.parse(await noLeak(res, label)) as {
        jsonrpc: string;
        error: { code: number };
      };
      expect(body.jsonrpc, label).toBe('2.0');
      expect(body.error.code, label).toBeLessThan(0);
    }
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('POST');
  });

  it('JSON-RPC: a version the card does not support is refused without a stack in the logs', async () => {
    agent = await startAgent({ policies: [] });
    const logged = vi.spyOn(console, 'error');
    try {
      for (const [version, method] of [
        [undefined, 'SendMessage'],
        ['0.3', 'Foo'],
        ['9.9', 'GetTask'],
      ] as const) {
        const res = await fetch(agent.jsonRpcUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(version ? { 'a2a-version': version } : {}),
          },
          body: rpcBody(method, { id: 'x' }),
        });
        const body = (await res.json()) as { id: number; error: { message: string } };
        expect(body.id).toBe(1);
        expect(body.error.message).toMatch(/not supported/);
      }
      expect(logged).not.toHaveBeenCalled();
      expect(agent.handlerCalls).toEqual([]);
    } finally {
      logged.mockRestore();
    }
  });
});
