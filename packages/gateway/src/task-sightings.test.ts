import { describe, expect, it } from 'vitest';
import { SseDataReader, sightingOf, sightingOfAnswer, taskStateNumber } from './task-sightings.js';

describe('task sightings', () => {
  it('reads tasks, status updates and messages in the 1.0 and v0.3 shapes', () => {
    const task = { id: 't', status: { state: 'TASK_STATE_WORKING' } };
    expect(sightingOf({ task })).toEqual({ kind: 'task', taskId: 't', state: 2, object: task });
    const update = { taskId: 't', status: { state: 'TASK_STATE_CANCELED' }, metadata: { n: 1 } };
    expect(sightingOf({ statusUpdate: update })).toEqual({
      kind: 'task',
      taskId: 't',
      state: 5,
      object: update,
    });
    const legacyUpdate = { kind: 'status-update', taskId: 't', status: { state: 'completed' } };
    expect(sightingOf(legacyUpdate)).toEqual({
      kind: 'task',
      taskId: 't',
      state: 3,
      object: legacyUpdate,
    });
    const legacyTask = { kind: 'task', id: 't', status: { state: 'input-required' } };
    expect(sightingOf(legacyTask)).toEqual({
      kind: 'task',
      taskId: 't',
      state: 6,
      object: legacyTask,
    });
    expect(sightingOfAnswer('jsonrpc', { result: { message: { messageId: 'r' } } })).toEqual({
      kind: 'message',
      message: { messageId: 'r' },
    });
    expect(sightingOf({ artifactUpdate: {} })).toBeUndefined();
    expect(taskStateNumber('nonsense')).toBeUndefined();
  });

  it('splits SSE into events across chunks and line ends', () => {
    const seen: string[] = [];
    const reader = new SseDataReader((d) => seen.push(d), 1000);
    const text = 'data: {"a":1}\r\n\r\nevent: x\ndata: 1\ndata: 2\n\n: comment\rdata:3\r\r';
    const bytes = new TextEncoder().encode(text);
    for (let i = 0; i < bytes.length; i += 3) reader.push(bytes.slice(i, i + 3));
    expect(seen).toEqual(['{"a":1}', '1\n2', '3']);
  });

  it('decodes UTF-8 split anywhere across chunks, and ignores a leading BOM', () => {
    const seen: string[] = [];
    const reader = new SseDataReader((d) => seen.push(d), 1000);
    const bytes = new TextEncoder().encode('\uFEFFdata: é😀\r\n\r\ndata:ü\n\n');
    for (const byte of bytes) reader.push(Uint8Array.of(byte));
    expect(seen).toEqual(['é😀', 'ü']);
  });

  it('skips an event longer than its bound', () => {
    const seen: string[] = [];
    const reader = new SseDataReader((d) => seen.push(d), 10);
    reader.push(new TextEncoder().encode(`data: ${'x'.repeat(50)}\n\ndata: ok\n\n`));
    expect(seen).toEqual(['ok']);
  });
});
