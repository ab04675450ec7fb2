import { describe, expect, it } from 'vitest';
import {
  classifyJsonRpc,
  classifyRest,
  isLegacyVersion,
  routeRequest,
} from './classify-request.js';
import type { ProxiedInterface } from './upstream-card.js';

const interfaces: ProxiedInterface[] = [
  { binding: 'jsonrpc', path: '/a2a/jsonrpc', lowerPath: '/a2a/jsonrpc' },
  { binding: 'rest', path: '/a2a/rest', lowerPath: '/a2a/rest' },
];
const jsonRpc = interfaces[0] as ProxiedInterface;

describe('routeRequest', () => {
  it('routes the card’s paths in any case, one trailing slash, and nothing else', () => {
    expect(routeRequest('POST', '/A2A/JsonRpc/', interfaces).kind).toBe('jsonrpc');
    expect(routeRequest('POST', '/a2a//jsonrpc', interfaces).kind).toBe('answer');
    expect(routeRequest('POST', '/other', interfaces)).toMatchObject({
      kind: 'answer',
      answer: { status: 404 },
    });
    expect(routeRequest('GET', '/a2a/jsonrpc', interfaces)).toMatchObject({
      kind: 'answer',
      answer: { status: 405 },
    });
  });

  it('gives REST requests their canonical path from the route table', () => {
    expect(
      routeRequest('HEAD', '/A2A/REST/acme/Tasks/t%2D1/PushNotificationConfigs/c%201/', interfaces),
    ).toMatchObject({
      kind: 'rest',
      method: 'GetTaskPushNotificationConfig',
      path: '/a2a/rest/acme/tasks/t-1/pushNotificationConfigs/c%201',
      tenant: 'acme',
      taskId: 't-1',
      verb: 'GET',
    });
    expect(routeRequest('POST', '/a2a/rest/v1/message:send', interfaces)).toMatchObject({
      kind: 'rest',
      method: 'SendMessage',
      path: '/a2a/rest/v1/message:send',
      legacy: true,
    });
    // Under 1.0 a /v1/... path is tenant v1's route, as the SDK routes it.
    expect(
      routeRequest('POST', '/a2a/rest/v1/message:send', interfaces, { legacyRoutes: false }),
    ).toMatchObject({ kind: 'rest', method: 'SendMessage', tenant: 'v1', legacy: false });
    expect([undefined, '', '0.3', '0.3.0', ' 0.9'].map(isLegacyVersion)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['1.0', '1', '2.1', 'x', '0.2'].map(isLegacyVersion)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(routeRequest('PUT', '/a2a/rest/message:send', interfaces)).toMatchObject({
      kind: 'answer',
      answer: { status: 405 },
    });
  });
});

describe('classifyJsonRpc', () => {
  const classify = (text: string) => classifyJsonRpc(text, jsonRpc, '', 64);
  it('reads method, id, tenant, messageId and webhooks from the parsed body', () => {
    const text = JSON.stringify({
      jsonrpc: '2.0',
      id: 3,
      method: 'message/send',
      params: {
        tenant: 'acme',
        message: { messageId: 'm-1' },
        configuration: { pushNotificationConfig: { url: 'https://hooks.example/x' } },
      },
    });
    expect(classify(text)).toMatchObject({
      method: 'SendMessage',
      id: 3,
      tenant: 'acme',
      messageId: 'm-1',
      legacy: true,
      webhookUrls: ['https://hooks.example/x'],
      body: text,
    });
  });

  it('refuses batches, duplicate keys, a method that is no string or no A2A method', () => {
    const code = (text: string) => {
      const answer = classify(text);
      return 'method' in answer ? 'forwarded' : JSON.parse(answer.body).error.code;
    };
    expect(code('[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]')).toBe(-32600);
    expect(code('{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"SendMessage"}')).toBe(-32600);
    expect(code('{"jsonrpc":"2.0","id":1,"method":7}')).toBe(-32600);
    expect(code('{"jsonrpc":"2.0","id":1,"method":"Shutdown"}')).toBe(-32601);
    expect(code('{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"tenant":5}}')).toBe(-32602);
    expect(code('{"jsonrpc":')).toBe(-32700);
  });
});

describe('classifyRest', () => {
  it('forwards the parsed body and refuses one with a duplicate key', () => {
    const routed = routeRequest('POST', '/a2a/rest/message:send', interfaces);
    if (routed.kind !== 'rest') throw new Error('not routed');
    expect(classifyRest(routed, '{ "message": {"messageId":"m"} }', '?x=1', 64)).toMatchObject({
      messageId: 'm',
      path: '/a2a/rest/message:send?x=1',
      body: '{"message":{"messageId":"m"}}',
    });
    expect(classifyRest(routed, '{"message":{},"message":{}}', '', 64)).toMatchObject({
      status: 400,
    });
  });

  it('takes a tenantless route’s tenant from its body or query, and refuses two that differ', () => {
    const rest = (verb: string, path: string) => {
      const routed = routeRequest(verb, path, interfaces);
      if (routed.kind !== 'rest') throw new Error('not routed');
      return routed;
    };
    const get = rest('GET', '/a2a/rest/tasks/t-1');
    const tenantOf = (answer: ReturnType<typeof classifyRest>) =>
      'method' in answer ? answer.tenant : answer.status;
    expect(tenantOf(classifyRest(get, '', '?tenant=acme', 64))).toBe('acme');
    expect(tenantOf(classifyRest(get, '', '?Tenant=acme', 64))).toBeUndefined();
    expect(tenantOf(classifyRest(get, '', '?tenant=', 64))).toBeUndefined();
    expect(tenantOf(classifyRest(get, '', '?tenant=a&tenant=a', 64))).toBe(400);
    expect(tenantOf(classifyRest(get, '', '?tenant[x]=a', 64))).toBe(400);
    expect(tenantOf(classifyRest(get, '', `?${'a=1&'.repeat(1000)}tenant=acme`, 64))).toBe(400);
    const send = rest('POST', '/a2a/rest/message:send');
    expect(tenantOf(classifyRest(send, '{"tenant":"acme"}', '', 64))).toBe('acme');
    expect(tenantOf(classifyRest(send, '{"tenant":null}', '', 64))).toBeUndefined();
    expect(tenantOf(classifyRest(send, '{"tenant":["acme"]}', '', 64))).toBe(400);
    expect(tenantOf(classifyRest(send, '{"tenant":"acme"}', '?tenant=other', 64))).toBe(400);
    const inPath = rest('POST', '/a2a/rest/acme/message:send');
    expect(tenantOf(classifyRest(inPath, '{"tenant":"acme"}', '?tenant=acme', 64))).toBe('acme');
    expect(tenantOf(classifyRest(inPath, '{"tenant":"other"}', '', 64))).toBe(400);
    // v0.3 routes have no tenant, wherever one is named.
    const legacy = rest('POST', '/a2a/rest/v1/message:send');
    expect(tenantOf(classifyRest(legacy, '{"tenant":"acme"}', '?tenant=x', 64))).toBeUndefined();
  });
});
