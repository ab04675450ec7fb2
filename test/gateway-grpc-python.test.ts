/**
 * gRPC through the gateway in front of the stdlib Python test agent's gRPC server (Debian's
 * python3-grpcio; `test/fixtures/python-agent/grpc_service.py`), found from its card: a call
 * relayed with its credentials; a spent caller makes the agent run nothing; a rejection read by
 * grpc-js (`grpc-status-details-bin` decoded), by the SDK's gRPC client and by ours (which waits
 * and gets through); a server stream relayed to its terminal message; a client cancel (unary and
 * stream) and a deadline reach the agent (it sees the call's deadline and the caller leaving).
 * Skipped without python3-grpcio, failed under CI=true.
 */

import type { AgentCard } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { decodeStatus, type RatePolicy } from 'a2a-ratelimit';
import { createRetryInterceptor } from 'a2a-ratelimit/client/grpc';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { rawClient, rawUnary, startGrpcGateway } from './gateway-grpc.helpers.js';
import {
  type PythonAgent,
  type PythonAgentOptions,
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';
import { decodeGrpcRejection } from './rejection-wire.helpers.js';

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const STREAM = '/lf.a2a.v1.A2AService/SendStreamingMessage';
const run = pythonAgentSupport(true).available || pythonAgentRequired;

const perCaller: RatePolicy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  limit: 2,
  windowSeconds: 3600,
  burst: 2,
};

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(options: PythonAgentOptions, policy: RatePolicy = perCaller) {
  const agent: PythonAgent = await startPythonAgent({ ...options, grpc: true });
  closers.push(() => agent.stop());
  const gw = await startGrpcGateway(agent.url, { policies: [policy] });
  closers.push(gw.close);
  const client = rawClient(gw.grpcTarget);
  closers.push(() => client.close());
  return { agent, gw, client };
}

function md(caller: string): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('a2a-version', '1.0');
  m.set('authorization', `Bearer ${caller}`);
  return m;
}

function request(messageId: string): Buffer {
  return A2AService.sendMessage.requestSerialize({
    tenant: '',
    message: textMessage({ messageId, text: 'hi' }),
  } as never);
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe.skipIf(!run)('gRPC through the gateway (upstream: Python stdlib agent)', () => {
  it('relays a call with its credentials; a spent caller makes the agent run nothing', async () => {
    const { agent, client } = await setup({ answer: 'task' });
    for (const id of ['py-1', 'py-2']) {
      const { error, answer } = await rawUnary(client, SEND, request(id), md('zoe'));
      expect(error).toBeUndefined();
      const decoded = A2AService.sendMessage.responseDeserialize(answer as Buffer) as {
        payload?: { $case: string };
      };
      expect(decoded.payload?.$case).toBe('task');
    }
    for (let i = 3; i <= 6; i++) {
      const { error } = await rawUnary(client, SEND, request(`py-${i}`), md('zoe'));
      expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      const decoded = decodeGrpcRejection(
        error?.code ?? 0,
        error?.details ?? '',
        (error as grpc.ServiceError).metadata.getMap(),
      );
      expect(decoded?.policy).toBe('per-caller');
    }
    const counts = await agent.counts();
    expect(counts.byBinding.GRPC).toBe(2);
    expect(counts.runsByMessageId).toEqual({ 'py-1': 1, 'py-2': 1 });
    expect(counts.byAuthorization['Bearer zoe']).toBe(2);
  });

  it('relays a server stream to its terminal message', async () => {
    const { client } = await setup({ taskSeconds: 0.3, updateSeconds: 0.1 });
    const states: number[] = [];
    const call = client.makeServerStreamRequest(
      STREAM,
      (b: Buffer) => b,
      (b: Buffer) => b,
      request('py-s1'),
      md('yan'),
      {},
    );
    call.on('data', (b: Buffer) => {
      const event = A2AService.sendStreamingMessage.responseDeserialize(b) as unknown as {
        payload?: { value: { status?: { state: number } } };
      };
      states.push(event.payload?.value.status?.state ?? -1);
    });
    const code = await new Promise<number>((resolve) => {
      call.on('error', (e: grpc.ServiceError) => resolve(e.code));
      call.on('status', (s: grpc.StatusObject) => resolve(s.code));
    });
    expect(code).toBe(grpc.status.OK);
    expect(states.length).toBeGreaterThanOrEqual(2);
    expect(states.at(-1)).toBe(3);
  });

  it('a deadline reaches the agent: it sees grpc-timeout, and the caller leaving', async () => {
    const { agent, client } = await setup({ taskSeconds: 30, blocking: true });
    // Long enough for the call to reach the agent on a loaded machine (its task takes 30 s).
    const { error } = await rawUnary(client, SEND, request('py-d1'), md('xia'), {
      deadline: Date.now() + 2_000,
    });
    expect(error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    const counts = await agent.counts();
    expect(counts.grpcCallsWithDeadline).toBe(1);
    await until(async () => (await agent.counts()).callsClosedByClient >= 1);
  });

  it('a rejection read by grpc-js (details decoded), by the SDK’s gRPC client, and by ours (which waits and gets through)', async () => {
    // One a second per caller, a burst of 1: a refused call is told to wait 1 s.
    const { agent, gw, client } = await setup(
      { answer: 'task' },
      { ...perCaller, limit: 60, windowSeconds: 60, burst: 1 },
    );
    expect((await rawUnary(client, SEND, request('r-1'), md('ria'))).error).toBeUndefined();
    const { error } = await rawUnary(client, SEND, request('r-2'), md('ria'));
    expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    const [bin] = (error?.metadata.get('grpc-status-details-bin') ?? []) as Buffer[];
    const status = decodeStatus(bin as Buffer);
    expect(status.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(status.details.map((d) => d.type).sort()).toEqual([
      'ErrorInfo',
      'QuotaFailure',
      'RetryInfo',
    ]);
    expect(status.details.find((d) => d.type === 'RetryInfo')?.message).toEqual({
      retryDelay: { seconds: 1n, nanos: 0 },
    });

    const card = (await (
      await fetch(`${gw.baseUrl}/.well-known/agent-card.json`)
    ).json()) as AgentCard;
    const factory = (interceptors: grpc.Interceptor[]) =>
      new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new GrpcTransportFactory({ grpcCallOptions: { interceptors } })],
          preferredTransports: ['GRPC'],
        }),
      ).createFromAgentCard(card);
    // The SDK's client (anonymous: a caller of its own): its second message is refused.
    const sdk = await factory([]);
    await sdk.sendMessage({ message: textMessage({ messageId: 'r-3', text: 'hi' }) } as never);
    const refused = await sdk
      .sendMessage({ message: textMessage({ messageId: 'r-4', text: 'hi' }) } as never)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(String((refused as Error | undefined)?.message)).toMatch(
      /RESOURCE_EXHAUSTED|per-caller/i,
    );

    // Our client under the SDK's: it waits the delay the rejection says and gets through.
    const ours = await factory([createRetryInterceptor({ agent: gw.grpcTarget })]);
    await ours.sendMessage({ message: textMessage({ messageId: 'r-5', text: 'hi' }) } as never);
    const counts = await agent.counts();
    expect(counts.runsByMessageId).toEqual({ 'r-1': 1, 'r-3': 1, 'r-5': 1 });
  });

  it('a client cancel reaches the agent: unary and stream', async () => {
    const { agent, client } = await setup({ taskSeconds: 30, blocking: true, updateSeconds: 0.1 });
    const unary = client.makeUnaryRequest(
      SEND,
      (b: Buffer) => b,
      (b: Buffer) => b,
      request('c-1'),
      md('cai'),
      {},
      () => undefined,
    );
    await until(async () => (await agent.counts()).runsByMessageId['c-1'] === 1);
    unary.cancel();
    await until(async () => (await agent.counts()).callsClosedByClient >= 1);

    const stream = client.makeServerStreamRequest(
      STREAM,
      (b: Buffer) => b,
      (b: Buffer) => b,
      request('c-2'),
      md('cai'),
      {},
    );
    stream.on('error', () => undefined);
    const first = new Promise((resolve) => stream.once('data', resolve));
    await first;
    stream.cancel();
    await until(async () => (await agent.counts()).streamsClosedByClient >= 1);
    expect((await agent.counts()).openStreams).toBe(0);
  });
});
