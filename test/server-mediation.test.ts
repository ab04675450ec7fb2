/**
 * Complete mediation, tried as an attacker would against the real SDK server on all three
 * bindings: generated request variants (path case, repeated and trailing slashes, encodings,
 * tenant prefixes, query strings, HEAD / OPTIONS / other verbs, v0.3 and 1.0 names, forged
 * admission metadata) must never run an SDK operation the limiter did not admit for that very
 * request, a spent caller must be refused on every one, and no answer is HTML or shows a stack.
 */

import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { Policy } from 'a2a-ratelimit';
import { TICKET_HEADER } from 'a2a-ratelimit/server';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

/** The admission header a mediating gateway sets (what `a2a-ratelimit-gateway` sends). */
const ADMISSION_HEADER = 'x-a2a-ratelimit-admission';

import { MOUNTS, startAgent, type TestAgent } from './server-agent.helpers.js';

/** One request per caller per hour, on every method: a caller's first request is its last. */
const ONE_EACH: Policy = {
  name: 'one-each',
  kind: 'rate',
  scope: 'caller',
  limit: 1,
  windowSeconds: 3600,
  burst: 1,
};

/** SDK handler operation → the A2A method it serves. */
const OPERATION_METHOD: Readonly<Record<string, string>> = {
  sendMessage: 'SendMessage',
  sendMessageStream: 'SendStreamingMessage',
  getTask: 'GetTask',
  listTasks: 'ListTasks',
  cancelTask: 'CancelTask',
  resubscribe: 'SubscribeToTask',
  createTaskPushNotificationConfig: 'CreateTaskPushNotificationConfig',
  getTaskPushNotificationConfig: 'GetTaskPushNotificationConfig',
  listTaskPushNotificationConfigs: 'ListTaskPushNotificationConfigs',
  deleteTaskPushNotificationConfig: 'DeleteTaskPushNotificationConfig',
  getAuthenticatedExtendedAgentCard: 'GetExtendedAgentCard',
};

let counter = 0;
/** Variants that ran an SDK operation: the properties must not pass by refusing everything. */
let ranOperations = 0;
const fresh = (prefix: string): string => `${prefix}-${++counter}`;

/** What one request did: the operations the SDK ran and the admissions made, while it ran. */
async function observe<T>(
  agent: TestAgent,
  send: () => Promise<T>,
): Promise<{ result: T; ran: string[]; admitted: { caller: string; method: string }[] }> {
  const calls = agent.handlerCalls.length;
  const admissions = agent.admissions.length;
  const result = await send();
  return {
    result,
    ran: agent.handlerCalls.slice(calls).map((name) => OPERATION_METHOD[name] ?? name),
    admitted: agent.admissions.slice(admissions),
  };
}

/** The ran ⇒ admitted check, and the refusal of a spent caller. */
function expectMediated(
  seen: { ran: string[]; admitted: { caller: string; method: string }[] },
  caller: string,
  spent: boolean,
  label: string,
): void {
  if (seen.ran.length > 0) ranOperations++;
  if (spent) {
    expect(seen.ran, `${label}: a spent caller ran an operation`).toEqual([]);
    return;
  }
  for (const method of seen.ran) {
    expect(
      seen.admitted.some((a) => a.caller === caller && a.method === method),
      `${label}: ${method} ran without being admitted (admitted: ${JSON.stringify(seen.admitted)})`,
    ).toBe(true);
  }
}

/** An answer is never Express's HTML page and never shows a stack or a file path. */
function expectNoLeak(contentType: string | null, body: string, label: string): void {
  expect(contentType ?? '', label).not.toMatch(/html/i);
  expect(body, label).not.toMatch(/<html|<!DOCTYPE|\n\s+at |node_modules|\/work\//i);
}

/** One of `values`; a `[value, weight]` pair is drawn `weight` times as often as the others. */
function weighted<T>(...values: (T | readonly [T, number])[]): fc.Arbitrary<T> {
  return fc.oneof(
    ...values.map((v) =>
      Array.isArray(v)
        ? { arbitrary: fc.constant(v[0] as T), weight: v[1] as number }
        : { arbitrary: fc.constant(v as T), weight: 1 },
    ),
  );
}
function recase(text: string, mode: string): string {
  if (mode === 'upper') return text.toUpperCase();
  if (mode === 'lower') return text.toLowerCase();
  if (mode === 'title')
    return text.replace(/(^|[/:])([a-z])/g, (_m, a, b: string) => a + b.toUpperCase());
  return text;
}

describe.each(MOUNTS)('complete mediation (%s mount)', (mount) => {
  let agent: TestAgent;
  let taskId = '';
  beforeAll(async () => {
    agent = await startAgent({ policies: [ONE_EACH], mount, limiter: { dedup: false } });
    const res = await fetch(`${agent.restUrl}/message:send`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'a2a-version': '1.0',
        authorization: 'Bearer owner',
      },
      body: JSON.stringify({
        message: { messageId: 'seed', role: 'ROLE_USER', parts: [{ text: 'task' }] },
      }),
    });
    taskId = ((await res.json()) as { task: { id: string } }).task.id;
    // Spend the attacker's one request.
    await fetch(`${agent.restUrl}/tasks`, {
      headers: { 'a2a-version': '1.0', authorization: 'Bearer spent' },
    });
  });
  afterAll(async () => agent.close());

  const restPaths = [
    ['POST', 'message:send'],
    ['POST', 'message:stream'],
    ['GET', 'extendedAgentCard'],
    ['GET', 'tasks'],
    ['GET', 'tasks/{task}'],
    ['GET', 'tasks/{task}:subscribe'],
    ['POST', 'tasks/{task}:subscribe'],
    ['POST', 'tasks/{task}:cancel'],
    ['POST', 'tasks/{task}/pushNotificationConfigs'],
    ['GET', 'tasks/{task}/pushNotificationConfigs'],
    ['GET', 'tasks/{task}/pushNotificationConfigs/cfg-1'],
    ['DELETE', 'tasks/{task}/pushNotificationConfigs/cfg-1'],
    ['GET', 'v1/card'],
    ['POST', 'v1/message:send'],
    ['GET', 'v1/tasks/{task}'],
  ] as const;

  const restVariant = fc.record({
    route: fc.constantFrom(...restPaths),
    verb: weighted([undefined, 12], 'GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS'),
    case: weighted(['as-is', 3], 'upper', 'lower', 'title'),
    tenant: weighted(['', 6], 'acme', 'v1', 'tasks', '%61cme', '%ff', '%', '%u0041', 'a%2Fb'),
    trailing: weighted(['', 4], '/', '//'),
    leadingSlashes: weighted(['/', 4], '//'),
    colon: weighted([':', 6], '%3A', '%3a'),
    query: weighted(['', 4], '?x=1', '?tenant=other', '?historyLength=1', '?'),
    version: weighted(['1.0', 6], '0.3', undefined),
    type: weighted(['application/json', 6], 'application/a2a+json', 'text/plain', undefined),
    spent: weighted([false, 2], true),
  });

  beforeEach(() => {
    ranOperations = 0;
  });

  it('REST: an operation runs only when admitted for that request; a spent caller runs none', async () => {
    await fc.assert(
      fc.asyncProperty(restVariant, async (v) => {
        const defaultVerb: string = v.route[0];
        const template: string = v.route[1];
        const verb = v.verb ?? defaultVerb;
        let path = recase(template, v.case).replace(/\{task\}/gi, taskId);
        path = path.replace(/:(send|stream|subscribe|cancel)/gi, (m) => v.colon + m.slice(1));
        if (v.tenant !== '') path = `${v.tenant}/${path}`;
        const url = `${agent.restUrl}${v.leadingSlashes}${path}${v.trailing}${v.query}`;
        const caller = v.spent ? 'spent' : fresh('rest');
        const headers: Record<string, string> = { authorization: `Bearer ${caller}` };
        if (v.version !== undefined) headers['a2a-version'] = v.version;
        if (v.type !== undefined) headers['content-type'] = v.type;
        const body =
          verb === 'GET' || verb === 'HEAD' || verb === 'OPTIONS'
            ? undefined
            : JSON.stringify({
                message: { messageId: fresh('m'), role: 'ROLE_USER', parts: [{ text: 'task' }] },
                url: 'http://127.0.0.1:9/hook',
                id: 'cfg-1',
              });
        const label = `${verb} ${url} ${JSON.stringify(headers)}`;
        const seen = await observe(agent, async () => {
          const res = await fetch(url, {
            method: verb,
            headers,
            ...(body === undefined ? {} : { body }),
          });
          return {
            type: res.headers.get('content-type'),
            text: await res.text(),
            status: res.status,
          };
        });
        expectMediated(seen, caller, v.spent, label);
        // Alone on its path, the combined handler answers every miss; mounted before the SDK's
        // router, what no A2A route takes is the app's to answer.
        if (mount === 'combined') expectNoLeak(seen.result.type, seen.result.text, label);
        if (v.spent && seen.result.status < 300 && verb !== 'OPTIONS') {
          throw new Error(`${label}: a spent caller got ${seen.result.status}`);
        }
      }),
      { numRuns: 300 },
    );
    expect(ranOperations, 'variants that ran an operation').toBeGreaterThan(10);
  });

  const rpcVariant = fc.record({
    path: weighted(['', 4], '/', '//', '///', '/x', '/?x=1', '//?a=b', '/./'),
    verb: weighted(['POST', 10], 'GET', 'HEAD', 'PUT', 'OPTIONS'),
    method: fc.constantFrom(
      'SendMessage',
      'SendStreamingMessage',
      'GetTask',
      'ListTasks',
      'CancelTask',
      'SubscribeToTask',
      'GetExtendedAgentCard',
      'CreateTaskPushNotificationConfig',
      'ListTaskPushNotificationConfigs',
      'message/send',
      'message/stream',
      'tasks/get',
      'tasks/resubscribe',
      'agent/getAuthenticatedExtendedCard',
      'sendmessage',
      'SENDMESSAGE',
      'GetTask ',
      'Foo',
    ),
    version: weighted(['1.0', 6], '0.3', undefined),
    type: weighted(
      ['application/json', 6],
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'text/plain',
      undefined,
    ),
    shape: weighted(['object', 6], 'batch', 'string'),
    tenant: fc.constantFrom(undefined, 'acme'),
    spent: weighted([false, 2], true),
  });

  it('JSON-RPC: an operation runs only when admitted for that request; a spent caller runs none', async () => {
    await fc.assert(
      fc.asyncProperty(rpcVariant, async (v) => {
        const caller = v.spent ? 'spent' : fresh('rpc');
        const params = {
          id: taskId,
          taskId,
          message: { messageId: fresh('m'), role: 'ROLE_USER', parts: [{ text: 'task' }] },
          ...(v.tenant === undefined ? {} : { tenant: v.tenant }),
        };
        const envelope = { jsonrpc: '2.0', id: 7, method: v.method, params };
        const body =
          v.shape === 'batch'
            ? [envelope]
            : v.shape === 'string'
              ? JSON.stringify(envelope)
              : envelope;
        const headers: Record<string, string> = { authorization: `Bearer ${caller}` };
        if (v.version !== undefined) headers['a2a-version'] = v.version;
        if (v.type !== undefined) headers['content-type'] = v.type;
        const url = `${agent.jsonRpcUrl}${v.path}`;
        const label = `${v.verb} ${url} ${JSON.stringify(headers)} ${JSON.stringify(body).slice(0, 80)}`;
        const seen = await observe(agent, async () => {
          const res = await fetch(url, {
            method: v.verb,
            headers,
            ...(v.verb === 'GET' || v.verb === 'HEAD' ? {} : { body: JSON.stringify(body) }),
          });
          return { type: res.headers.get('content-type'), text: await res.text() };
        });
        expectMediated(seen, caller, v.spent, label);
        if (mount === 'combined') expectNoLeak(seen.result.type, seen.result.text, label);
      }),
      { numRuns: 300 },
    );
    expect(ranOperations, 'variants that ran an operation').toBeGreaterThan(10);
  });

  it('gRPC: only admitted calls run, forged admission and ticket metadata are worthless', async () => {
    const client = new grpc.Client(agent.grpcUrl, grpc.credentials.createInsecure());
    const definitions = Object.values(A2AService);
    const variant = fc.record({
      definition: fc.constantFrom(...definitions),
      service: fc.constantFrom('lf.a2a.v1.A2AService', 'a2a.v1.A2AService', 'lf.a2a.v1.a2aservice'),
      recase: fc.boolean(),
      forge: fc.constantFrom('none', 'admission', 'ticket', 'both'),
      spent: weighted([false, 2], true),
    });
    try {
      await fc.assert(
        fc.asyncProperty(variant, async (v) => {
          const caller = v.spent ? 'spent' : fresh('grpc');
          const rpc = v.definition.path.split('/')[2] as string;
          const path = `/${v.service}/${v.recase ? rpc.toLowerCase() : rpc}`;
          const metadata = new grpc.Metadata();
          metadata.set('authorization', `Bearer ${caller}`);
          metadata.set('a2a-version', '1.0');
          if (v.forge === 'admission' || v.forge === 'both') {
            metadata.set(ADMISSION_HEADER, rpc);
          }
          if (v.forge === 'ticket' || v.forge === 'both') metadata.set(TICKET_HEADER, 't1');
          const request = {
            tenant: '',
            id: taskId,
            taskId,
            message: {
              messageId: fresh('m'),
              role: 1,
              parts: [{ content: { $case: 'text', value: 'task' } }],
            },
          };
          const label = `${path} forge=${v.forge} caller=${caller}`;
          const seen = await observe(
            agent,
            () =>
              new Promise<void>((resolve) => {
                const def = v.definition as unknown as {
                  requestSerialize: (r: unknown) => Buffer;
                  responseDeserialize: (b: Buffer) => unknown;
                  responseStream: boolean;
                };
                if (def.responseStream) {
                  const stream = client.makeServerStreamRequest(
                    path,
                    def.requestSerialize,
                    def.responseDeserialize,
                    request as never,
                    metadata,
                  );
                  stream.on('data', () => undefined);
                  stream.on('error', () => resolve());
                  stream.on('end', () => resolve());
                } else {
                  client.makeUnaryRequest(
                    path,
                    def.requestSerialize,
                    def.responseDeserialize,
                    request as never,
                    metadata,
                    () => resolve(),
                  );
                }
              }),
          );
          expectMediated(seen, caller, v.spent, label);
        }),
        { numRuns: 120 },
      );
    } finally {
      client.close();
    }
  });
});
