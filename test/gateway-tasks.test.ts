/**
 * Concurrency for a task's life and deduplication through the gateway, read from what passes
 * through (SendMessage results, CancelTask answers, GetTask polls of the upstream with the
 * admitting request's credentials), on JSON-RPC and REST: with at most 3 tasks per caller and
 * tasks that stay WORKING, 3 are admitted and the 4th is refused with a delay; the slot frees when
 * a task is cancelled, when the tasks complete, and when the upstream dies (its polls run out). A
 * copy of an admitted messageId never reaches the upstream again: during the task it gets the
 * task, while the first copy is still unanswered it gets MESSAGE_IN_PROGRESS, after a Message
 * answer it gets that Message. The upstream is a parameter.
 */

import type { ConcurrencyPolicy } from 'a2a-ratelimit';
import { afterEach, describe, expect, it } from 'vitest';
import {
  GATEWAY_UPSTREAMS,
  type GatewayUpstream,
  type StartUpstream,
  startTestGateway,
  type TestGateway,
  textMessageJson,
  until,
} from './gateway.helpers.js';
import { decodeJsonRpcRejection, decodeRestRejection } from './rejection-wire.helpers.js';

const UPSTREAMS = GATEWAY_UPSTREAMS;
const BINDINGS = ['jsonrpc', 'rest'] as const;
type Binding = (typeof BINDINGS)[number];

const tasksPerCaller: ConcurrencyPolicy = {
  name: 'tasks-per-caller',
  kind: 'concurrency',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  max: 3,
};

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly body: Record<string, unknown>;
}

/** SendMessage (or any method) on `binding`, as caller `caller`. */
async function call(
  gw: TestGateway,
  binding: Binding,
  caller: string,
  method: 'SendMessage' | 'CancelTask',
  params: Record<string, unknown>,
): Promise<Answer> {
  const headers = {
    'a2a-version': '1.0',
    'content-type': 'application/json',
    authorization: `Bearer ${caller}`,
  };
  const r =
    binding === 'jsonrpc'
      ? await fetch(`${gw.baseUrl}/a2a/jsonrpc`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        })
      : await fetch(
          method === 'SendMessage'
            ? `${gw.baseUrl}/a2a/rest/message:send`
            : `${gw.baseUrl}/a2a/rest/tasks/${params.id}:cancel`,
          { method: 'POST', headers, body: JSON.stringify(params) },
        );
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, body: JSON.parse(text) };
}

function send(
  gw: TestGateway,
  binding: Binding,
  caller: string,
  messageId: string,
  text: string,
  returnImmediately = true,
): Promise<Answer> {
  return call(gw, binding, caller, 'SendMessage', {
    message: textMessageJson(messageId, text),
    configuration: { returnImmediately },
  });
}

/** The result object of an answer (JSON-RPC `result`, or the REST body). */
function resultOf(binding: Binding, answer: Answer): Record<string, unknown> {
  return (binding === 'jsonrpc' ? answer.body.result : answer.body) as Record<string, unknown>;
}

function taskOf(binding: Binding, answer: Answer): { id: string; status: { state: string } } {
  return resultOf(binding, answer).task as { id: string; status: { state: string } };
}

function rejectionOf(binding: Binding, answer: Answer) {
  return binding === 'jsonrpc'
    ? decodeJsonRpcRejection(answer.status, answer.headers, answer.text)
    : decodeRestRejection(answer.status, answer.headers, answer.text);
}

/** How many times the upstream ran `messageId`. */
async function runsOf(upstream: GatewayUpstream, messageId: string): Promise<number | undefined> {
  return (await upstream.seen()).runs[messageId];
}

async function setup(
  start: StartUpstream,
): Promise<{ upstream: GatewayUpstream; gw: TestGateway }> {
  const upstream = await start();
  closers.push(upstream.close);
  const gw = await startTestGateway(upstream.baseUrl, {
    policies: [tasksPerCaller],
    limiter: { dedup: { waitForTaskMs: 50 } },
    gateway: { taskPolling: { firstDelayMs: 20, maxDelayMs: 100, maxPolls: 30 } },
  });
  closers.push(gw.close);
  return { upstream, gw };
}

describe.each(UPSTREAMS)('task life through the gateway (upstream: %s)', (_name, start) => {
  it.each(BINDINGS)(
    '%s: max 3 tasks per caller — the 4th refused; slots free on cancel, on completion, and when the upstream dies',
    async (binding) => {
      const { upstream, gw } = await setup(start);
      const first = await Promise.all(
        [1, 2, 3].map((i) => send(gw, binding, 'alice', `${binding}-h${i}`, 'hold')),
      );
      expect(first.map((a) => taskOf(binding, a).status.state)).toEqual(
        Array(3).fill('TASK_STATE_WORKING'),
      );
      const fourth = await send(gw, binding, 'alice', `${binding}-h4`, 'hold');
      const refused = rejectionOf(binding, fourth);
      expect(refused?.kind).toBe('quota');
      expect(refused?.delaySeconds).toBeGreaterThanOrEqual(1);
      expect(await runsOf(upstream, `${binding}-h4`)).toBeUndefined();

      // Cancelled through the gateway: the CANCELED answer frees its slot.
      const cancelled = await call(gw, binding, 'alice', 'CancelTask', {
        id: taskOf(binding, first[0] as Answer).id,
      });
      expect(cancelled.status).toBe(200);
      const fifth = await send(gw, binding, 'alice', `${binding}-h5`, 'hold');
      expect(taskOf(binding, fifth).status.state).toBe('TASK_STATE_WORKING');
      expect(
        rejectionOf(binding, await send(gw, binding, 'alice', `${binding}-h6`, 'hold'))?.kind,
      ).toBe('quota');

      // Completed on the upstream: the gateway's GetTask polls see it and free the slots.
      await upstream.releaseHeld();
      await until(() => gw.gateway.tasksFollowed() === 0);
      const again = await Promise.all(
        [7, 8, 9].map((i) => send(gw, binding, 'alice', `${binding}-h${i}`, 'hold')),
      );
      expect(again.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(
        rejectionOf(binding, await send(gw, binding, 'alice', `${binding}-h10`, 'hold'))?.kind,
      ).toBe('quota');

      // The upstream dies with 3 tasks WORKING: the polls (the gateway's lease TTL) run out and
      // the slots are freed.
      await upstream.die();
      await until(() => gw.gateway.tasksFollowed() === 0);
      const after = await send(gw, binding, 'alice', `${binding}-h11`, 'hold');
      // Admitted (no slot held any more); the upstream is gone, so: 503 AGENT_UNAVAILABLE.
      expect(rejectionOf(binding, after)?.kind).toBe('overload');
      expect(after.text).toContain('AGENT_UNAVAILABLE');
    },
  );

  it.each(BINDINGS)(
    '%s: a copy of an admitted messageId never reaches the upstream again',
    async (binding) => {
      const { upstream, gw } = await setup(start);
      // During the task: the copy gets the first copy's task (GetTask on the upstream).
      const original = await send(gw, binding, 'bob', `${binding}-d1`, 'hold');
      const copy = await send(gw, binding, 'bob', `${binding}-d1`, 'hold');
      expect(taskOf(binding, copy).id).toBe(taskOf(binding, original).id);
      expect(taskOf(binding, copy).status.state).toBe('TASK_STATE_WORKING');

      // While the first copy is unanswered (a blocking send): MESSAGE_IN_PROGRESS.
      const blocking = send(gw, binding, 'bob', `${binding}-d2`, 'hold', false);
      await until(async () => (await runsOf(upstream, `${binding}-d2`)) === 1);
      const early = await send(gw, binding, 'bob', `${binding}-d2`, 'hold', false);
      expect(early.text).toContain('MESSAGE_IN_PROGRESS');
      await upstream.releaseHeld();
      const done = await blocking;
      // After it: the copy gets the finished task.
      const late = await send(gw, binding, 'bob', `${binding}-d2`, 'hold', false);
      expect(taskOf(binding, late).id).toBe(taskOf(binding, done).id);
      expect(taskOf(binding, late).status.state).toBe('TASK_STATE_COMPLETED');

      // A Message answer: the copy gets the same Message.
      const reply = await send(gw, binding, 'bob', `${binding}-d3`, 'hi');
      const replyCopy = await send(gw, binding, 'bob', `${binding}-d3`, 'hi');
      expect(resultOf(binding, replyCopy).message).toEqual(resultOf(binding, reply).message);

      const { runs } = await upstream.seen();
      for (const id of ['d1', 'd2', 'd3']) expect(runs[`${binding}-${id}`]).toBe(1);
    },
  );
});
