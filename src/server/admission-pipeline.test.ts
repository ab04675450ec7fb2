import type { Message, Task } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import type { A2AMethod } from '../core/a2a-methods.js';
import {
  type AdmissionStage,
  admitCall,
  admitResubscription,
  type BindingSteps,
  type PipelineCall,
  type RejectedOutcome,
  resolveDuplicate,
} from './admission-pipeline.js';
import type { AdmissionOutcome, AdmissionTicket, Limiter } from './limiter-api.js';
import type { AdmissionRequest } from './limiter-options.js';

function call(method: A2AMethod = 'SendMessage', legacy = false): PipelineCall {
  return {
    caller: '',
    skill: undefined,
    binding: 'rest',
    method,
    tenant: 't',
    messageId: 'm-1',
    legacy,
  };
}

function ticket(): AdmissionTicket & { ended: number } {
  const t = {
    id: 't1',
    request: { caller: 'a', method: 'SendMessage', binding: 'rest' } as AdmissionRequest,
    limits: [],
    headers: {},
    claimedHold: false,
    needsEnd: true,
    ended: 0,
    end() {
      t.ended++;
    },
  };
  return t;
}

type Outcome = AdmissionOutcome | Promise<AdmissionOutcome> | (() => never);

/** Steps that record what the pipeline asked of the binding; the limiter answers `outcome`. */
function recorder(
  outcome: Outcome,
  options: {
    identify?: (c: PipelineCall) => string | PromiseLike<string>;
    skillOf?: (c: PipelineCall) => string | undefined;
    gone?: boolean;
    resubscription?: Outcome;
    duplicate?: (c: PipelineCall, taskId: string | undefined) => Promise<void>;
  } = {},
) {
  const seen: {
    admitted: AdmissionRequest[];
    resubscribed: AdmissionRequest[];
    runs: { method: A2AMethod; ticket: AdmissionTicket }[];
    rejects: RejectedOutcome[];
    duplicates: (string | undefined)[];
    fails: { error: unknown; stage: AdmissionStage }[];
  } = { admitted: [], resubscribed: [], runs: [], rejects: [], duplicates: [], fails: [] };
  const answer = (o: Outcome) => (typeof o === 'function' ? o() : o);
  const limiter = {
    admit(request: AdmissionRequest) {
      seen.admitted.push({ ...request });
      return answer(outcome);
    },
    admitResubscription(request: AdmissionRequest) {
      seen.resubscribed.push({ ...request });
      return answer(options.resubscription ?? outcome);
    },
  } as unknown as Limiter;
  const steps: BindingSteps<PipelineCall> = {
    limiter,
    identify: options.identify ?? (() => 'alice'),
    skillOf: options.skillOf ?? (() => 'search'),
    isGone: () => options.gone === true,
    run: (_c, t, method) => void seen.runs.push({ method, ticket: t }),
    reject: (_c, o) => void seen.rejects.push(o),
    duplicate:
      options.duplicate ??
      (async (_c, taskId) => {
        seen.duplicates.push(taskId);
      }),
    fail: (_c, error, stage) => void seen.fails.push({ error, stage }),
  };
  return { steps, seen };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));
const rejected = { status: 'rejected', rejection: {}, limits: [] } as unknown as RejectedOutcome;

describe('admitCall', () => {
  it('synchronous identity and decision: the call is asked as that caller and skill, and runs at once', () => {
    const t = ticket();
    const { steps, seen } = recorder({ status: 'admitted', ticket: t });
    const c = call();
    admitCall(steps, c);
    expect(seen.admitted).toEqual([expect.objectContaining({ caller: 'alice', skill: 'search' })]);
    expect(seen.runs).toEqual([{ method: 'SendMessage', ticket: t }]);
    expect(seen.fails).toEqual([]);
  });

  it('asynchronous identity and decision reach the same end', async () => {
    const t = ticket();
    const { steps, seen } = recorder(Promise.resolve({ status: 'admitted', ticket: t }), {
      identify: async () => 'bob',
    });
    admitCall(steps, call('GetTask'));
    expect(seen.runs).toEqual([]);
    await settled();
    expect(seen.admitted[0]?.caller).toBe('bob');
    expect(seen.runs).toEqual([{ method: 'GetTask', ticket: t }]);
  });

  it('a rejection is the binding’s to encode; nothing runs', () => {
    const { steps, seen } = recorder(rejected);
    admitCall(steps, call());
    expect(seen.rejects).toEqual([rejected]);
    expect(seen.runs).toEqual([]);
  });

  it('a client gone before the decision came: the ticket ends and nothing runs', async () => {
    const t = ticket();
    const { steps, seen } = recorder(Promise.resolve({ status: 'admitted', ticket: t }), {
      gone: true,
    });
    admitCall(steps, call());
    await settled();
    expect(t.ended).toBe(1);
    expect(seen.runs).toEqual([]);
  });

  it('each failure reaches `fail` once, with the stage it came from', async () => {
    const boom = new Error('boom');
    const cases: [ReturnType<typeof recorder>, AdmissionStage][] = [
      [
        recorder(rejected, {
          identify: () => {
            throw boom;
          },
        }),
        'identity',
      ],
      [recorder(rejected, { identify: () => Promise.reject(boom) }), 'identity'],
      [
        recorder(rejected, {
          skillOf: () => {
            throw boom;
          },
        }),
        'decision',
      ],
      [
        recorder(() => {
          throw boom;
        }),
        'decision',
      ],
      [recorder(Promise.reject(boom)), 'decision'],
      [
        recorder(
          { status: 'duplicate', taskId: 'task-1' },
          { duplicate: () => Promise.reject(boom) },
        ),
        'resubscription',
      ],
    ];
    for (const [{ steps }] of cases) admitCall(steps, call());
    await settled();
    for (const [{ seen }, stage] of cases) {
      expect(seen.fails).toEqual([{ error: boom, stage }]);
      expect(seen.runs).toEqual([]);
      expect(seen.rejects).toEqual([]);
    }
  });

  it('a duplicate goes to the binding with the task id of its first copy', async () => {
    const { steps, seen } = recorder({ status: 'duplicate', taskId: 'task-1' });
    admitCall(steps, call());
    await settled();
    expect(seen.duplicates).toEqual(['task-1']);
  });
});

describe('admitResubscription', () => {
  it('admitted: runs as SubscribeToTask; a duplicate answer is a failure', () => {
    const t = ticket();
    const ok = recorder({ status: 'admitted', ticket: t });
    const c = call('SendStreamingMessage');
    c.caller = 'alice';
    admitResubscription(ok.steps, c);
    expect(ok.seen.resubscribed[0]).toMatchObject({
      caller: 'alice',
      method: 'SendStreamingMessage',
    });
    expect(ok.seen.runs).toEqual([{ method: 'SubscribeToTask', ticket: t }]);
    const odd = recorder({ status: 'duplicate', taskId: 'x' });
    admitResubscription(odd.steps, c);
    expect(odd.seen.fails).toEqual([
      { error: new Error('a resubscription cannot be a duplicate'), stage: 'resubscription' },
    ]);
    const refused = recorder(Promise.resolve(rejected));
    admitResubscription(refused.steps, c);
    return settled().then(() => expect(refused.seen.rejects).toEqual([rejected]));
  });
});

describe('resolveDuplicate', () => {
  const context = { marker: 'ctx' } as unknown as ServerCallContext;
  const handlerOf = (state: number | Error) =>
    ({
      getTask: async ({ id, tenant }: { id: string; tenant: string }, ctx: ServerCallContext) => {
        expect(ctx).toBe(context);
        expect(tenant).toBe('t');
        if (state instanceof Error) throw state;
        return { id, status: { state } } as unknown as Task;
      },
    }) as unknown as A2ARequestHandler;
  const WORKING = 2;
  const COMPLETED = 3;

  it('no task: says the message was processed without one, and reads nothing', async () => {
    let built = 0;
    const answer = await resolveDuplicate(handlerOf(WORKING), call(), undefined, () => {
      built++;
      return context;
    });
    expect(answer).toEqual({
      kind: 'no-task',
      message:
        'Message m-1 was already received and processed without creating a task; it is not run again',
    });
    expect(built).toBe(0);
  });

  it('the task as the method makes of it', async () => {
    const of = async (method: A2AMethod, state: number | Error, legacy = false) =>
      resolveDuplicate(handlerOf(state), call(method, legacy), 'task-1', () => context);
    expect((await of('SendMessage', WORKING)).kind).toBe('task');
    expect((await of('SendStreamingMessage', COMPLETED)).kind).toBe('final-event');
    expect((await of('SendStreamingMessage', WORKING, true)).kind).toBe('final-event');
    expect(await of('SendStreamingMessage', WORKING)).toMatchObject({
      kind: 'resubscribe',
      taskId: 'task-1',
      context,
    });
    const lost = new Error('Task not found');
    expect(await of('SendMessage', lost)).toEqual({ kind: 'lookup-failed', error: lost });
  });

  it('a kept Message answer: the Message in the scope it was given in, "no task" in any other', async () => {
    const message = { messageId: 'r-1', parts: [] } as unknown as Message;
    const kept = { message, tenant: 't', owner: 'alice' };
    const ctxIn = (tenant: string | undefined, userName: string) =>
      ({ tenant, user: { userName, isAuthenticated: true } }) as unknown as ServerCallContext;
    const of = (method: A2AMethod, ctx: ServerCallContext) =>
      resolveDuplicate(handlerOf(WORKING), call(method), undefined, () => ctx, kept);
    expect(await of('SendMessage', ctxIn('t', 'alice'))).toEqual({
      kind: 'message',
      message,
      stream: false,
    });
    expect(await of('SendStreamingMessage', ctxIn('t', 'alice'))).toEqual({
      kind: 'message',
      message,
      stream: true,
    });
    // Another user behind the same caller key, or another tenant: the SDK would not show them
    // the first copy's task either.
    expect((await of('SendMessage', ctxIn('t', 'bob'))).kind).toBe('no-task');
    expect((await of('SendMessage', ctxIn(undefined, 'alice'))).kind).toBe('no-task');
  });
});
