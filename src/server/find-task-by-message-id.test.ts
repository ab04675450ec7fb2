import { Task } from '@a2a-js/sdk';
import { InMemoryTaskStore, ServerCallContext } from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import { findTaskByMessageId } from './find-task-by-message-id.js';
import type { AdmissionRequest } from './limiter-options.js';

const contextOf = (caller: string) =>
  new ServerCallContext({ user: { isAuthenticated: true, userName: caller } });

function task(id: string, messageIds: string[], atMs: number): Task {
  return Task.fromJSON({
    id,
    contextId: `ctx-${id}`,
    status: { state: 'TASK_STATE_WORKING', timestamp: new Date(atMs).toISOString() },
    history: messageIds.map((messageId) => ({
      messageId,
      role: 'ROLE_USER',
      parts: [{ text: 'x' }],
    })),
  });
}

const send = (caller: string, messageId: string): AdmissionRequest => ({
  caller,
  method: 'SendMessage',
  messageId,
  binding: 'jsonrpc',
});

describe('findTaskByMessageId over the SDK task store', () => {
  it('finds the task whose history holds the message, across pages, in the caller’s scope only', async () => {
    const store = new InMemoryTaskStore();
    for (let i = 0; i < 25; i++) {
      await store.save(task(`t${i}`, [`m${i}`, `follow-up-${i}`], 1_000 + i), contextOf('alice'));
    }
    await store.save(task('bob-task', ['m-bob'], 5_000), contextOf('bob'));
    const find = findTaskByMessageId(store, {
      contextOf: (r) => contextOf(r.caller),
      pageSize: 10,
    });
    expect(await find(send('alice', 'm3'))).toBe('t3'); // third page (newest first)
    expect(await find(send('alice', 'follow-up-20'))).toBe('t20');
    expect(await find(send('alice', 'm-bob'))).toBeUndefined(); // another caller's task
    expect(await find(send('bob', 'm-bob'))).toBe('bob-task');
    expect(await find(send('alice', 'never-sent'))).toBeUndefined();
    const short = findTaskByMessageId(store, {
      contextOf: (r) => contextOf(r.caller),
      pageSize: 10,
      maxPages: 1,
    });
    expect(await short(send('alice', 'm3'))).toBeNull(); // beyond the pages it reads: unknown
  });

  it('rejects bad options', () => {
    const store = new InMemoryTaskStore();
    expect(() =>
      findTaskByMessageId(store, { contextOf: () => contextOf('a'), pageSize: 0 }),
    ).toThrow(RangeError);
    expect(() =>
      findTaskByMessageId(store, { contextOf: () => contextOf('a'), maxPages: 0 }),
    ).toThrow(RangeError);
  });
});
