import {
  type A2ARequestHandler,
  type ServerCallContext,
  UnauthenticatedUser,
} from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import {
  ADMISSION_HEADER,
  admissionMark,
  guardContextBuilder,
  guardRequestHandler,
  markAdmitted,
  mediationStats,
} from './mediation.js';

const ran: string[] = [];
const inner = new Proxy({} as A2ARequestHandler, {
  get: (_t, name) => () => {
    ran.push(String(name));
    return Promise.resolve({});
  },
});
const guarded = guardRequestHandler(inner);
const build = guardContextBuilder();
const contextOf = (headers: Record<string, string | undefined>): ServerCallContext =>
  build({ extensions: undefined, user: new UnauthenticatedUser(), headers });

describe('mediation backstop', () => {
  it('runs an operation only for a context admitted for that very operation', async () => {
    ran.length = 0;
    const headers = {};
    markAdmitted(headers, 'GetTask');
    const context = contextOf(headers);
    await guarded.getTask({ id: 't', tenant: '' } as never, context);
    expect(ran).toEqual(['getTask']);
    const before = mediationStats().undecided;
    expect(() => guarded.cancelTask({ id: 't' } as never, context)).toThrow(
      'CancelTask refused: the request reached the agent without a rate-limit decision',
    );
    expect(() => guarded.sendMessageStream({} as never, contextOf({}))).toThrow(/refused/);
    expect(mediationStats().undecided).toBe(before + 2);
    expect(ran).toEqual(['getTask']);
  });

  it('takes the interceptor mark, never a forged one, and keeps the mark from the agent', async () => {
    ran.length = 0;
    const forged = { [ADMISSION_HEADER]: 'GetTask' };
    expect(() => guarded.getTask({} as never, contextOf(forged))).toThrow(/refused/);
    const headers: Record<string, string | undefined> = {
      [ADMISSION_HEADER]: admissionMark('ListTasks'),
    };
    const context = contextOf(headers);
    expect(headers[ADMISSION_HEADER]).toBeUndefined();
    expect(
      (context.state.get('headers') as Record<string, unknown>)[ADMISSION_HEADER],
    ).toBeUndefined();
    await guarded.listTasks({} as never, context);
    expect(ran).toEqual(['listTasks']);
  });

  it('leaves the agent card unguarded (the SDK reads it for every request)', async () => {
    ran.length = 0;
    await guarded.getAgentCard();
    expect(ran).toEqual(['getAgentCard']);
  });
});
