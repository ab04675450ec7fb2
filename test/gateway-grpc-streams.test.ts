/**
 * gRPC through the gateway, beyond unary: server streams relayed message by message to their
 * terminal message, decided before the first one, their concurrency held until they end; a client
 * cancel and a deadline reach the upstream (its call is cancelled); task states read from the
 * relayed messages hold a task's concurrency for its life; a copy of an admitted messageId never
 * reaches the upstream again (in flight: MESSAGE_IN_PROGRESS; afterwards: the first copy's task).
 * Upstream: the SDK's gRPC agent with no limiter of ours.
 */

import * as http2 from 'node:http2';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { ConcurrencyPolicy, Policy, RatePolicy } from 'a2a-ratelimit';
import { decodeStatus } from 'a2a-ratelimit';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GrpcTestGateway,
  type GrpcTestUpstream,
  rawClient,
  rawUnary,
  startGrpcGateway,
  startSdkGrpcUpstream,
} from './gateway-grpc.helpers.js';
import { decodeGrpcRejection } from './rejection-wire.helpers.js';

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const STREAM = '/lf.a2a.v1.A2AService/SendStreamingMessage';

const streamsPerCaller: ConcurrencyPolicy = {
  name: 'tasks-per-caller',
  kind: 'concurrency',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  max: 1,
};

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(policies: readonly Policy[]): Promise<{
  upstream: GrpcTestUpstream;
  gw: GrpcTestGateway;
  client: grpc.Client;
}> {
  const upstream = await startSdkGrpcUpstream();
  closers.push(upstream.close);
  const gw = await startGrpcGateway(upstream.baseUrl, {
    policies,
    limiter: { dedup: { waitForTaskMs: 50 } },
    gateway: { taskPolling: { firstDelayMs: 20, maxDelayMs: 100, maxPolls: 30 } },
  });
  closers.push(gw.close);
  const client = rawClient(gw.grpcTarget);
  closers.push(() => client.close());
  return { upstream, gw, client };
}

function md(caller: string): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('a2a-version', '1.0');
  m.set('authorization', `Bearer ${caller}`);
  return m;
}

function request(messageId: string, text: string, returnImmediately = false): Buffer {
  return A2AService.sendMessage.requestSerialize({
    tenant: '',
    message: textMessage({ messageId, text }),
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      returnImmediately,
    },
  } as never);
}

interface Decoded {
  payload?: { $case: string; value: { id?: string; taskId?: string; status?: { state: number } } };
}

const decodeStream = (b: Buffer) =>
  A2AService.sendStreamingMessage.responseDeserialize(b) as unknown as Decoded;
const decodeSend = (b: Buffer) =>
  A2AService.sendMessage.responseDeserialize(b) as unknown as Decoded;

/** A server stream: its messages (decoded) as they come, and its status. */
function openStream(client: grpc.Client, body: Buffer, metadata: grpc.Metadata) {
  const messages: Decoded[] = [];
  const call = client.makeServerStreamRequest(
    STREAM,
    (b: Buffer) => b,
    (b: Buffer) => b,
    body,
    metadata,
    {},
  );
  call.on('data', (b: Buffer) => messages.push(decodeStream(b)));
  const status = new Promise<grpc.StatusObject | grpc.ServiceError>((resolve) => {
    call.on('error', (e: grpc.ServiceError) => resolve(e));
    call.on('status', (s: grpc.StatusObject) => {
      if (s.code === grpc.status.OK) resolve(s);
    });
  });
  return { call, messages, status };
}

/** Waits (polling, no timed assertion) until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

const stateOf = (d: Decoded | undefined) => d?.payload?.value.status?.state;

describe('gRPC streams through the gateway (upstream: SDK)', () => {
  it('relays a server stream message by message to its terminal message; its slot is held until it ends', async () => {
    const { upstream, client } = await setup([streamsPerCaller]);
    const stream = openStream(client, request('st-1', 'hold'), md('carol'));
    await until(() => stream.messages.length >= 1);
    expect(stream.messages[0]?.payload?.$case).toBe('task');
    expect(stateOf(stream.messages[0])).toBe(2);
    // The stream holds carol's one slot: a second call is refused before the agent sees it.
    const second = await rawUnary(client, SEND, request('st-2', 'task'), md('carol'));
    expect(second.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(upstream.executions.has('st-2')).toBe(false);
    upstream.releaseHeld();
    const status = await stream.status;
    expect(status.code).toBe(grpc.status.OK);
    const last = stream.messages.at(-1);
    expect(last?.payload?.$case).toBe('statusUpdate');
    expect(stateOf(last)).toBe(3);
    // The stream ended with its task COMPLETED: the slot is free again.
    const third = await rawUnary(client, SEND, request('st-3', 'task'), md('carol'));
    expect(third.error).toBeUndefined();
    expect(stateOf(decodeSend(third.answer as Buffer))).toBe(3);
  });

  it('a stream refused before its first message: the agent runs nothing', async () => {
    const spent: RatePolicy = {
      name: 'per-caller',
      kind: 'rate',
      scope: 'caller',
      methods: ['SendStreamingMessage'],
      limit: 1,
      windowSeconds: 3600,
      burst: 1,
    };
    const { upstream, client } = await setup([spent]);
    expect((await openStream(client, request('sp-1', 'task'), md('dan')).status).code).toBe(0);
    for (let i = 2; i <= 5; i++) {
      const refused = openStream(client, request(`sp-${i}`, 'task'), md('dan'));
      const status = (await refused.status) as grpc.ServiceError;
      expect(status.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(refused.messages).toEqual([]);
      expect(
        decodeGrpcRejection(status.code, status.details, status.metadata.getMap())?.policy,
      ).toBe('per-caller');
    }
    expect(upstream.calls).toEqual(['SendStreamingMessage']);
    expect([...upstream.executions.keys()]).toEqual(['sp-1']);
  });

  it('a client cancel reaches the upstream: its call is cancelled (unary and stream)', async () => {
    const { upstream, client } = await setup([]);
    const unary = client.makeUnaryRequest(
      SEND,
      (b: Buffer) => b,
      (b: Buffer) => b,
      request('c-1', 'hold'),
      md('erin'),
      () => undefined,
    );
    await until(() => upstream.executions.has('c-1'));
    unary.cancel();
    await until(() => upstream.cancelled.includes('SendMessage'));

    const stream = openStream(client, request('c-2', 'hold'), md('erin'));
    await until(() => stream.messages.length >= 1);
    stream.call.cancel();
    await until(() => upstream.cancelled.includes('SendStreamingMessage'));
    expect(upstream.cancelled).toEqual(['SendMessage', 'SendStreamingMessage']);
  });

  it('a deadline reaches the upstream: DEADLINE_EXCEEDED for the caller, the upstream call cancelled', async () => {
    const { upstream, client } = await setup([]);
    // Long enough for the call to reach the upstream on a loaded machine (the upstream holds it:
    // the deadline passes there either way).
    const { error } = await rawUnary(client, SEND, request('dl-1', 'hold'), md('fay'), {
      deadline: Date.now() + 2_000,
    });
    expect(error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(upstream.executions.get('dl-1')).toBe(1);
    await until(() => upstream.cancelled.includes('SendMessage'));
    // The deadline went to the upstream as what was left of it.
  });

  it('a deadline passing mid-stream (headers sent): DEADLINE_EXCEEDED in the trailers, the upstream cancelled, the gateway serving on', async () => {
    const { upstream, gw, client } = await setup([]);
    // A raw HTTP/2 caller that does not enforce its own deadline: the gateway's does. Long enough
    // for the first message to come back on a loaded machine (the upstream holds the stream).
    const session = http2.connect(`http://${gw.grpcTarget}`);
    closers.push(() => session.close());
    const req = session.request({
      ':method': 'POST',
      ':path': STREAM,
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': '2000m',
      'a2a-version': '1.0',
      authorization: 'Bearer hank',
    });
    const body = request('dm-1', 'hold');
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    body.copy(frame, 5);
    req.end(frame);
    let headers: http2.IncomingHttpHeaders | undefined;
    let data = 0;
    req.on('response', (h) => {
      headers = h;
    });
    req.on('data', (chunk: Buffer) => {
      data += chunk.length;
    });
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve) => {
      req.on('trailers', resolve);
      req.on('close', () => resolve({}));
    });
    expect(headers?.[':status']).toBe(200);
    expect(data).toBeGreaterThan(0);
    expect(trailers['grpc-status']).toBe('4');
    await until(() => upstream.cancelled.includes('SendStreamingMessage'));
    // The gateway is still up and relaying.
    const after = await rawUnary(client, SEND, request('dm-2', 'task'), md('hank'));
    expect(after.error).toBeUndefined();
  });

  it('a task’s slot is held for its life, read from the relayed answer; freed when the task completes', async () => {
    const { upstream, gw, client } = await setup([streamsPerCaller]);
    const first = await rawUnary(client, SEND, request('t-1', 'hold', true), md('gus'));
    expect(first.error).toBeUndefined();
    const task = decodeSend(first.answer as Buffer);
    expect(task.payload?.$case).toBe('task');
    expect(stateOf(task)).toBe(2);
    expect(gw.gateway.tasksFollowed()).toBe(1);
    // The unary call ended, but the task still runs: its slot stays taken.
    const refused = await rawUnary(client, SEND, request('t-2', 'task'), md('gus'));
    expect(refused.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(upstream.executions.has('t-2')).toBe(false);
    // The task completes on the upstream; the gateway's GetTask polls see it and free the slot.
    upstream.releaseHeld();
    await until(() => gw.gateway.tasksFollowed() === 0);
    expect((await rawUnary(client, SEND, request('t-3', 'task'), md('gus'))).error).toBeUndefined();
  });

  it('a copy of an admitted messageId never reaches the upstream again: in flight MESSAGE_IN_PROGRESS, afterwards the first copy’s task', async () => {
    const { upstream, client } = await setup([]);
    const blocking = rawUnary(client, SEND, request('d-1', 'hold'), md('hal'));
    await until(() => upstream.executions.has('d-1'));
    const early = await rawUnary(client, SEND, request('d-1', 'hold'), md('hal'));
    expect(early.error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(early.error?.details).toBe(
      'A copy of message d-1 is still being processed; retry in 1 s for its task',
    );
    const [bin] = (early.error as grpc.ServiceError).metadata.get('grpc-status-details-bin');
    const status = decodeStatus(bin as Buffer);
    expect(status.code).toBe(grpc.status.UNAVAILABLE);
    expect(status.details).toContainEqual({
      type: 'ErrorInfo',
      message: expect.objectContaining({ reason: 'MESSAGE_IN_PROGRESS' }),
    });
    upstream.releaseHeld();
    const done = await blocking;
    const doneTask = decodeSend(done.answer as Buffer);
    expect(stateOf(doneTask)).toBe(3);
    const late = await rawUnary(client, SEND, request('d-1', 'hold'), md('hal'));
    expect(late.error).toBeUndefined();
    const lateTask = decodeSend(late.answer as Buffer);
    expect(lateTask.payload?.$case).toBe('task');
    expect(lateTask.payload?.value.id).toBe(doneTask.payload?.value.id);
    expect(stateOf(lateTask)).toBe(3);
    expect(upstream.executions.get('d-1')).toBe(1);
    expect(upstream.calls.filter((c) => c === 'SendMessage')).toHaveLength(1);
    expect(upstream.calls).toContain('GetTask');
  });
});
