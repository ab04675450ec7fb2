/**
 * Admission in front of the real SDK server on all three bindings, driven by the SDK's own
 * clients and by plain fetch: the same flood gives the same reason, policy and delay on
 * JSON-RPC, REST and gRPC; rejected calls ran nothing and stored nothing; the raw wire matches
 * the wire contract (docs/architecture.md); malformed bodies get the SDK's own errors; streams are rejected before any event.
 */

import { decodeStatus } from '@a2a-js/sdk/errors/grpc';
import type { Policy } from 'a2a-ratelimit';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type DecodedRejection,
  decodeGrpcRejection,
  decodeJsonRpcRejection,
  decodeRestRejection,
} from './rejection-wire.helpers.js';
import { as, MOUNTS, startAgent, type TestAgent, userMessage } from './server-agent.helpers.js';

const perCaller: Policy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  limit: 2,
  windowSeconds: 60,
  burst: 2,
};

let agent: TestAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

/** A fetch that records every response (the SDK client's documented hook). */
function recordingFetch(seen: { status: number; headers: Headers; body: string }[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const body = await res.clone().text();
    seen.push({ status: res.status, headers: res.headers, body });
    return res;
  };
}

async function rejectionOf(error: unknown): Promise<DecodedRejection | undefined> {
  const e = error as {
    statusDetailsBin?: Uint8Array;
    cause?: { code: number; details: string; metadata: { getMap(): Record<string, unknown> } };
  };
  if (e.cause?.metadata !== undefined) {
    return decodeGrpcRejection(e.cause.code, e.cause.details, e.cause.metadata.getMap() as never);
  }
  return undefined;
}

describe.each(MOUNTS)('%s mount', (mount) => {
  describe('the same flood on every binding', () => {
    it('gives the same reason, policy and delay, runs nothing and stores nothing for rejections', async () => {
      agent = await startAgent({ mount, policies: [perCaller] });
      const results: Record<string, DecodedRejection[]> = {};
      for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const) {
        const seen: { status: number; headers: Headers; body: string }[] = [];
        const client = await agent.client(binding, recordingFetch(seen));
        const caller = `caller-${binding}`;
        const rejections: DecodedRejection[] = [];
        for (let i = 0; i < 5; i++) {
          try {
            await client.sendMessage(
              { message: userMessage(`${binding}-m${i}`), tenant: '' } as never,
              as(caller),
            );
          } catch (error) {
            if (binding === 'GRPC') {
              const decoded = await rejectionOf(error);
              expect(decoded).toBeDefined();
              rejections.push(decoded as DecodedRejection);
              const bin = (error as { statusDetailsBin?: Uint8Array }).statusDetailsBin;
              expect(bin).toBeDefined();
              const status = decodeStatus(Buffer.from(bin as Uint8Array));
              expect(status.code).toBe(8);
              expect(status.details.map((d) => d.typeUrl)).toEqual([
                'type.googleapis.com/google.rpc.ErrorInfo',
                'type.googleapis.com/google.rpc.RetryInfo',
                'type.googleapis.com/google.rpc.QuotaFailure',
              ]);
            } else {
              const last = seen.at(-1) as { status: number; headers: Headers; body: string };
              const decoded =
                binding === 'JSONRPC'
                  ? decodeJsonRpcRejection(last.status, last.headers, last.body)
                  : decodeRestRejection(last.status, last.headers, last.body);
              expect(decoded).toBeDefined();
              rejections.push(decoded as DecodedRejection);
            }
          }
        }
        results[binding] = rejections;
      }
      const shape = (list: DecodedRejection[]) =>
        list.map((r) => ({
          reason: r.reason,
          policy: r.policy,
          delaySeconds: r.delaySeconds,
          scope: r.scope,
        }));
      expect(shape(results.JSONRPC ?? [])).toEqual([
        { reason: 'RATE_LIMIT_EXCEEDED', policy: 'per-caller', delaySeconds: 30, scope: 'caller' },
        { reason: 'RATE_LIMIT_EXCEEDED', policy: 'per-caller', delaySeconds: 60, scope: 'caller' },
        // Past one window ahead nothing is reserved; the delay is the true queue end.
        { reason: 'RATE_LIMIT_EXCEEDED', policy: 'per-caller', delaySeconds: 90, scope: 'caller' },
      ]);
      expect((results.JSONRPC ?? []).map((r) => r.reserved)).toEqual([true, true, false]);
      expect(shape(results['HTTP+JSON'] ?? [])).toEqual(shape(results.JSONRPC ?? []));
      expect(shape(results.GRPC ?? [])).toEqual(shape(results.JSONRPC ?? []));
      // 2 admitted per binding: the executor ran 6 times; rejected messageIds never ran.
      expect(agent.executionCount()).toBe(6);
      for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC']) {
        for (const i of [2, 3, 4]) expect(agent.executions.has(`${binding}-m${i}`)).toBe(false);
      }
      expect(await agent.taskCount()).toBe(6);
    });
  });

  const rawMessage = (messageId: string, text = 'task', taskId?: string) => ({
    messageId,
    role: 'ROLE_USER',
    parts: [{ text }],
    ...(taskId === undefined ? {} : { taskId }),
  });

  function post(url: string, body: unknown, caller = 'raw', extra: Record<string, string> = {}) {
    return fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'a2a-version': '1.0',
        authorization: `Bearer ${caller}`,
        ...extra,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  describe('the raw wire (plain fetch)', () => {
    it('REST: 429, Retry-After, RateLimit headers and google.rpc.Status JSON as the wire contract says', async () => {
      agent = await startAgent({ mount, policies: [perCaller] });
      const url = `${agent.restUrl}/message:send`;
      const first = await post(url, { message: rawMessage('r1') });
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit-policy')).toBe('"per-caller";q=2;w=60');
      expect(first.headers.get('ratelimit')).toBe('"per-caller";r=1;t=30');
      expect((await post(url, { message: rawMessage('r2') })).status).toBe(200);
      const rejected = await post(url, { message: rawMessage('r3') });
      expect(rejected.status).toBe(429);
      expect(rejected.headers.get('content-type')).toBe('application/a2a+json');
      expect(rejected.headers.get('retry-after')).toBe('30');
      expect(rejected.headers.get('ratelimit-policy')).toBe('"per-caller";q=2;w=60');
      expect(rejected.headers.get('ratelimit')).toBe('"per-caller";r=0;t=30');
      const body = (await rejected.json()) as {
        error: { code: number; status: string; details: Record<string, unknown>[] };
      };
      expect(body.error.code).toBe(429);
      expect(body.error.status).toBe('RESOURCE_EXHAUSTED');
      expect(body.error.details[0]).toMatchObject({
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'RATE_LIMIT_EXCEEDED',
        domain: 'agents.example.com',
        metadata: {
          policy: 'per-caller',
          scope: 'caller',
          method: 'SendMessage',
          reserved: 'true',
        },
      });
      expect(body.error.details[1]).toEqual({
        '@type': 'type.googleapis.com/google.rpc.RetryInfo',
        retryDelay: '30s',
      });
      expect(body.error.details[2]).toMatchObject({
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      });
      expect(agent.executions.has('r3')).toBe(false);
    });

    it('JSON-RPC: HTTP 200 (or mirrored 429) with -32603 and the details in data; Retry-After header', async () => {
      agent = await startAgent({ mount, policies: [perCaller] });
      const call = (id: number, messageId: string) =>
        post(agent?.jsonRpcUrl as string, {
          jsonrpc: '2.0',
          id,
          method: 'SendMessage',
          params: { message: rawMessage(messageId) },
        });
      expect((await call(1, 'j1')).headers.get('ratelimit')).toBe('"per-caller";r=1;t=30');
      await call(2, 'j2');
      const rejected = await call(3, 'j3');
      expect(rejected.status).toBe(200);
      expect(rejected.headers.get('retry-after')).toBe('30');
      expect(rejected.headers.get('ratelimit')).toBe('"per-caller";r=0;t=30');
      const body = (await rejected.json()) as {
        id: number;
        error: { code: number; data: Record<string, unknown>[] };
      };
      expect(body.id).toBe(3);
      expect(body.error.code).toBe(-32603);
      expect(body.error.data.map((d) => d['@type'])).toEqual([
        'type.googleapis.com/google.rpc.ErrorInfo',
        'type.googleapis.com/google.rpc.RetryInfo',
        'type.googleapis.com/google.rpc.QuotaFailure',
      ]);
      await agent.close();
      agent = await startAgent({ mount, policies: [perCaller], mirrorHttpStatus: true });
      await call(1, 'k1');
      await call(2, 'k2');
      expect((await call(3, 'k3')).status).toBe(429);
    });

    it('malformed bodies get the SDK’s own errors, never an HTML page', async () => {
      agent = await startAgent({ mount, policies: [perCaller] });
      const rpc = await post(agent.jsonRpcUrl, '{"jsonrpc": "2.0", "method": ');
      expect(rpc.status).toBe(200);
      expect(await rpc.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: 'Invalid JSON payload.' },
      });
      const notRequest = await post(agent.jsonRpcUrl, { hello: 'world' });
      // Parsed but not a JSON-RPC request: passed through untouched, so this is the SDK's own answer.
      expect(((await notRequest.json()) as { error: { code: number } }).error.code).toBe(-32602);
      const rest = await post(`${agent.restUrl}/message:send`, '{"message": {');
      expect(rest.status).toBe(400);
      expect(rest.headers.get('content-type')).toContain('json');
      expect(
        ((await rest.json()) as { error: { code: number; status: string } }).error,
      ).toMatchObject({
        code: 400,
        status: 'INVALID_ARGUMENT',
      });
    });

    it('tenant comes from the REST prefix and from params.tenant', async () => {
      agent = await startAgent({
        mount,
        policies: [
          {
            name: 'per-tenant',
            kind: 'rate',
            scope: 'tenant',
            methods: ['SendMessage'],
            limit: 1,
            windowSeconds: 60,
          },
        ],
      });
      expect(
        (await post(`${agent.restUrl}/acme/message:send`, { message: rawMessage('t1') })).status,
      ).toBe(200);
      const second = await post(
        `${agent.restUrl}/acme/message:send`,
        { message: rawMessage('t2') },
        'someone-else',
      );
      expect(second.status).toBe(429);
      const body = (await second.json()) as {
        error: { details: { violations?: { subject: string }[] }[] };
      };
      expect(body.error.details[2]?.violations?.[0]?.subject).toBe('tenant:acme');
      const rpc = await post(agent.jsonRpcUrl, {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { tenant: 'acme', message: rawMessage('t3') },
      });
      expect(((await rpc.json()) as { error?: { code: number } }).error?.code).toBe(-32603);
      expect(
        (await post(`${agent.restUrl}/globex/message:send`, { message: rawMessage('t4') })).status,
      ).toBe(200);
    });
  });

  describe('streams and follow-ups', () => {
    it('rejects SendStreamingMessage and SubscribeToTask before any event on all three bindings', async () => {
      agent = await startAgent({
        mount,
        policies: [
          { ...perCaller, methods: ['SendStreamingMessage'], limit: 1, burst: 1 } as Policy,
          {
            name: 'subscribe',
            kind: 'rate',
            scope: 'caller',
            methods: ['SubscribeToTask'],
            limit: 1,
            windowSeconds: 60,
          },
        ],
      });
      for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const) {
        const client = await agent.client(binding);
        const caller = `s-${binding}`;
        const events: unknown[] = [];
        let taskId = '';
        for await (const event of client.sendMessageStream(
          { message: userMessage(`${binding}-hold`, 'hold'), tenant: '' } as never,
          as(caller),
        )) {
          events.push(event);
          taskId =
            (event as { payload?: { value?: { id?: string } } }).payload?.value?.id ?? taskId;
          break;
        }
        expect(taskId).not.toBe('');
        const rejectedEvents: unknown[] = [];
        await expect(
          (async () => {
            for await (const e of client.sendMessageStream(
              { message: userMessage(`${binding}-2`), tenant: '' } as never,
              as(caller),
            ))
              rejectedEvents.push(e);
          })(),
        ).rejects.toBeDefined();
        expect(rejectedEvents).toEqual([]);
        expect(agent.executions.has(`${binding}-2`)).toBe(false);
        // Subscribe: first one admitted, the second rejected before its first event.
        const ac = new AbortController();
        const first = client
          .resubscribeTask({ id: taskId, tenant: '' } as never, as(caller, ac.signal))
          [Symbol.asyncIterator]();
        expect((await first.next()).done).toBe(false);
        const second: unknown[] = [];
        await expect(
          (async () => {
            for await (const e of client.resubscribeTask(
              { id: taskId, tenant: '' } as never,
              as(caller),
            ))
              second.push(e);
          })(),
        ).rejects.toBeDefined();
        expect(second).toEqual([]);
        ac.abort();
        await first.return?.(undefined);
      }
      agent.releaseHeld();
    });

    it('a rejected follow-up message to an existing task appends nothing to its history', async () => {
      agent = await startAgent({ mount, policies: [perCaller] });
      const client = await agent.client('JSONRPC');
      const task = (await client.sendMessage(
        { message: userMessage('f1', 'input'), tenant: '' } as never,
        as('f'),
      )) as { id: string };
      await client.sendMessage({ message: userMessage('f2'), tenant: '' } as never, as('f'));
      const before = agent.taskStore.saved.get(task.id)?.history?.length;
      expect(before).toBeGreaterThan(0);
      for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const) {
        const c = await agent.client(binding);
        await expect(
          c.sendMessage(
            { message: userMessage(`f-${binding}`, 'task', task.id), tenant: '' } as never,
            as('f'),
          ),
        ).rejects.toBeDefined();
      }
      expect(agent.taskStore.saved.get(task.id)?.history?.length).toBe(before);
      expect(agent.executionCount()).toBe(2);
    });
  });
});
