import { A2AService } from '@a2a-js/sdk/server/grpc';
import { describe, expect, it } from 'vitest';
import { encodeGrpcMessage, wrapMessage } from './grpc-message.js';
import {
  encodeGetTaskRequest,
  grpcSightingOf,
  grpcWebhookUrls,
  wrapTask,
} from './grpc-sightings.js';
import { grpcOriginOf, grpcTimeoutMs, grpcTimeoutValue } from './grpc-upstream.js';

const task = {
  id: 't-1',
  contextId: 'c-1',
  status: { state: 2, message: undefined, timestamp: undefined },
  artifacts: [],
  history: [],
  metadata: { big: 'x'.repeat(1000) },
};

describe('grpc-sightings (read with the SDK’s own encoder on the other side)', () => {
  it('reads a Task, a status update and a Message answer', () => {
    const wrapped = A2AService.sendMessage.responseSerialize({
      payload: { $case: 'task', value: task },
    } as never);
    expect(grpcSightingOf('wrapped', wrapped)).toEqual({
      kind: 'task',
      taskId: 't-1',
      state: 2,
      object: { id: 't-1', status: { state: 2 }, metadata: { big: 'x'.repeat(1000) } },
    });
    const update = A2AService.sendStreamingMessage.responseSerialize({
      payload: {
        $case: 'statusUpdate',
        value: { taskId: 't-1', contextId: 'c-1', status: { state: 3 }, metadata: undefined },
      },
    } as never);
    expect(grpcSightingOf('wrapped', update)).toEqual({ kind: 'task', taskId: 't-1', state: 3 });
    const bare = A2AService.getTask.responseSerialize(task as never);
    expect(grpcSightingOf('task', bare)).toMatchObject({ kind: 'task', taskId: 't-1', state: 2 });
    const message = A2AService.sendMessage.responseSerialize({
      payload: {
        $case: 'message',
        value: {
          messageId: 'm',
          contextId: 'c',
          taskId: '',
          parts: [
            {
              content: { $case: 'text', value: 'hi' },
              metadata: undefined,
              filename: '',
              mediaType: '',
            },
            {
              content: { $case: 'data', value: { rows: [1, 'a', true, null] } },
              metadata: { k: 'v' },
              filename: 'f.json',
              mediaType: 'application/json',
            },
            {
              content: { $case: 'raw', value: Buffer.from('abc') },
              metadata: undefined,
              filename: '',
              mediaType: '',
            },
          ],
          role: 2,
          metadata: { usage: { totalTokens: 7 } },
          extensions: ['https://ext/1'],
          referenceTaskIds: [],
        },
      },
    } as never);
    const json = {
      messageId: 'm',
      contextId: 'c',
      role: 'ROLE_AGENT',
      parts: [
        { text: 'hi' },
        {
          data: { rows: [1, 'a', true, null] },
          metadata: { k: 'v' },
          filename: 'f.json',
          mediaType: 'application/json',
        },
        { raw: Buffer.from('abc').toString('base64') },
      ],
      metadata: { usage: { totalTokens: 7 } },
      extensions: ['https://ext/1'],
    };
    expect(grpcSightingOf('wrapped', message)).toEqual({ kind: 'message', message: json });
    // … and back: the bytes the SDK decodes to the same Message.
    const again = A2AService.sendMessage.responseDeserialize(
      Buffer.from(wrapMessage(encodeGrpcMessage(json) as Uint8Array)),
    );
    expect(again).toEqual(A2AService.sendMessage.responseDeserialize(message));
    expect(grpcSightingOf('wrapped', Buffer.from([0x0a, 0x50, 1]))).toBeUndefined();
  });

  it('reads the metadata of a Task and of a status update in JSON form (usage reports)', () => {
    const metadata = {
      usage: { totalTokens: 4000, parts: [1, 'two', true, null, { deep: { er: 2.5 } }] },
    };
    const update = A2AService.sendStreamingMessage.responseSerialize({
      payload: {
        $case: 'statusUpdate',
        value: { taskId: 't-1', contextId: 'c-1', status: { state: 3 }, metadata },
      },
    } as never);
    const seen = grpcSightingOf('wrapped', update);
    expect(seen).toMatchObject({ taskId: 't-1', state: 3 });
    expect(JSON.parse(JSON.stringify(seen?.kind === 'task' ? seen.object : null))).toEqual({
      id: 't-1',
      status: { state: 3 },
      metadata,
    });
    const bare = A2AService.getTask.responseSerialize({
      ...task,
      status: { state: 3 },
      metadata,
    } as never);
    const fromTask = grpcSightingOf('task', bare);
    expect(
      (fromTask?.kind === 'task' ? fromTask.object?.metadata : undefined) as unknown,
    ).toMatchObject({ usage: { totalTokens: 4000 } });
  });

  it('a metadata Struct nested deeper than 64 is not read (the state still is)', () => {
    let deep: Record<string, unknown> = { totalTokens: 1 };
    for (let i = 0; i < 80; i++) deep = { d: deep };
    const bare = A2AService.getTask.responseSerialize({ ...task, metadata: deep } as never);
    expect(grpcSightingOf('task', bare)).toEqual({ kind: 'task', taskId: 't-1', state: 2 });
  });

  it('encodes GetTask and wraps a Task as the SDK decodes them', () => {
    expect(
      A2AService.getTask.requestDeserialize(Buffer.from(encodeGetTaskRequest('t-9', 'acme'))),
    ).toMatchObject({
      id: 't-9',
      tenant: 'acme',
    });
    const bare = A2AService.getTask.responseSerialize(task as never);
    const decoded = A2AService.sendMessage.responseDeserialize(Buffer.from(wrapTask(bare))) as {
      payload: { $case: string; value: { id: string } };
    };
    expect(decoded.payload.$case).toBe('task');
    expect(decoded.payload.value.id).toBe('t-1');
  });

  it('finds the push URLs a request would have the agent call', () => {
    const push = {
      tenant: '',
      id: 'p',
      taskId: '',
      url: 'http://10.0.0.1/hook',
      token: '',
      authentication: undefined,
    };
    const send = A2AService.sendMessage.requestSerialize({
      tenant: '',
      message: {
        messageId: 'm',
        contextId: '',
        taskId: '',
        parts: [],
        role: 1,
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: push,
        returnImmediately: false,
      },
    } as never);
    expect(grpcWebhookUrls('SendMessage', send)).toEqual(['http://10.0.0.1/hook']);
    const create = A2AService.createTaskPushNotificationConfig.requestSerialize(push as never);
    expect(grpcWebhookUrls('CreateTaskPushNotificationConfig', create)).toEqual([
      'http://10.0.0.1/hook',
    ]);
    expect(grpcWebhookUrls('GetTask', create)).toEqual([]);
    // A field a URL is read through, with another wire type (protobufjs would read it): unreadable.
    expect(grpcWebhookUrls('CreateTaskPushNotificationConfig', Uint8Array.of(0x20, 0x05))).toBe(
      undefined,
    );
    expect(grpcWebhookUrls('SendMessage', Uint8Array.of(0x18, 0x01))).toBeUndefined();
    expect(grpcWebhookUrls('SendMessage', Uint8Array.of(0x1a, 0x02, 0x10, 0x01))).toBeUndefined();
  });

  it('reads grpc-timeout and upstream targets', () => {
    expect(grpcTimeoutMs('3S')).toBe(3000);
    expect(grpcTimeoutMs('250m')).toBe(250);
    expect(grpcTimeoutMs('1H')).toBe(3_600_000);
    expect(grpcTimeoutMs('123456789m')).toBeUndefined();
    expect(grpcTimeoutMs('5x')).toBeUndefined();
    // Past what a Node timer keeps (it would fire at once): taken as no deadline.
    expect(grpcTimeoutMs('596H')).toBe(596 * 3_600_000);
    expect(grpcTimeoutMs('700H')).toBeUndefined();
    // Forwarded within the spec's 8 digits.
    expect(grpcTimeoutValue(2500)).toBe('2500m');
    expect(grpcTimeoutValue(99_999_999)).toBe('99999999m');
    expect(grpcTimeoutValue(100_000_000)).toBe('100000S');
    expect(grpcTimeoutValue(0.2)).toBe('1m');
    expect(grpcOriginOf('127.0.0.1:50051')).toBe('http://127.0.0.1:50051');
    expect(grpcOriginOf('dns:///agent.example:443')).toBe('http://agent.example:443');
    expect(grpcOriginOf('https://agent.example:443')).toBe('https://agent.example:443');
    expect(grpcOriginOf('agent.example')).toBeUndefined();
  });
});
