import { describe, expect, it } from 'vitest';
import { identifyA2ARequest } from './identify-a2a-request.js';

const rpc = (method: string, params: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

describe('identifyA2ARequest', () => {
  it('reads JSON-RPC method and messageId (1.0 and v0.3 names)', () => {
    expect(
      identifyA2ARequest({
        httpMethod: 'POST',
        url: 'http://a/rpc',
        bodyText: rpc('SendMessage', { message: { messageId: 'm-1' } }),
      }),
    ).toEqual({ binding: 'jsonrpc', method: 'SendMessage', messageId: 'm-1', streaming: false });
    expect(
      identifyA2ARequest({
        httpMethod: 'POST',
        url: 'http://a/rpc',
        bodyText: rpc('message/stream', { message: { messageId: 'm-2' } }),
      }),
    ).toEqual({
      binding: 'jsonrpc',
      method: 'SendStreamingMessage',
      messageId: 'm-2',
      streaming: true,
    });
    expect(
      identifyA2ARequest({ httpMethod: 'POST', url: 'http://a/rpc', bodyText: rpc('Nope', {}) }),
    ).toBeUndefined();
  });

  it('reads REST routes, with and without a tenant prefix', () => {
    const cases: [string, string, string][] = [
      ['POST', '/a2a/rest/message:send', 'SendMessage'],
      ['POST', '/a2a/rest/acme/message:stream', 'SendStreamingMessage'],
      ['GET', '/a2a/rest/tasks/t1?historyLength=2', 'GetTask'],
      ['GET', '/a2a/rest/tasks?pageSize=3', 'ListTasks'],
      ['POST', '/a2a/rest/tasks/t1:cancel', 'CancelTask'],
      ['POST', '/a2a/rest/tasks/t1:subscribe', 'SubscribeToTask'],
      ['POST', '/a2a/rest/tasks/t1/pushNotificationConfigs', 'CreateTaskPushNotificationConfig'],
      ['GET', '/a2a/rest/tasks/t1/pushNotificationConfigs', 'ListTaskPushNotificationConfigs'],
      ['GET', '/a2a/rest/tasks/t1/pushNotificationConfigs/c1', 'GetTaskPushNotificationConfig'],
      [
        'DELETE',
        '/a2a/rest/tasks/t1/pushNotificationConfigs/c1',
        'DeleteTaskPushNotificationConfig',
      ],
      ['GET', '/a2a/rest/extendedAgentCard', 'GetExtendedAgentCard'],
    ];
    for (const [httpMethod, path, method] of cases) {
      expect(identifyA2ARequest({ httpMethod, url: `http://a${path}` })?.method).toBe(method);
    }
    expect(
      identifyA2ARequest({
        httpMethod: 'POST',
        url: 'http://a/message:send',
        bodyText: '{"message":{"messageId":"m-9"}}',
      })?.messageId,
    ).toBe('m-9');
    expect(
      identifyA2ARequest({ httpMethod: 'GET', url: 'http://a/.well-known/agent-card.json' }),
    ).toBeUndefined();
  });
});
