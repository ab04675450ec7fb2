/**
 * A copy of a message whose first copy was answered with a Message (no task), on gRPC through the
 * gateway: the copy gets that Message again — as SendMessage's result and as a stream's one
 * message — and on JSON-RPC too (the Message kept in its JSON form), without reaching the upstream
 * as a message again. Upstreams: the SDK's agent on gRPC and the stdlib Python agent's gRPC server.
 */

import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  rawClient,
  rawUnary,
  sendRequestBytes,
  startGrpcGateway,
  startSdkGrpcUpstream,
} from './gateway-grpc.helpers.js';
import {
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const STREAM = '/lf.a2a.v1.A2AService/SendStreamingMessage';

interface Upstream {
  readonly baseUrl: string;
  runs(messageId: string): Promise<number>;
  close(): Promise<void>;
}

const python = pythonAgentSupport(true).available || pythonAgentRequired;
const UPSTREAMS: readonly (readonly [string, () => Promise<Upstream>, boolean])[] = [
  [
    'sdk',
    async () => {
      const upstream = await startSdkGrpcUpstream();
      return {
        baseUrl: upstream.baseUrl,
        runs: async (id) => upstream.executions.get(id) ?? 0,
        close: () => upstream.close(),
      };
    },
    true,
  ],
  [
    'python',
    async () => {
      const agent = await startPythonAgent({ grpc: true, answer: 'message' });
      return {
        baseUrl: agent.url,
        runs: async (id) => (await agent.counts()).runsByMessageId[id] ?? 0,
        close: () => agent.stop(),
      };
    },
    python,
  ],
];

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function md(): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('a2a-version', '1.0');
  m.set('authorization', 'Bearer mia');
  return m;
}

interface Decoded {
  payload?: { $case: string; value: { messageId?: string; parts?: unknown[] } };
}

/** A server stream's messages (raw) and its status code. */
function streamOnce(
  client: grpc.Client,
  body: Buffer,
): Promise<{ code: number; messages: Buffer[] }> {
  const messages: Buffer[] = [];
  const call = client.makeServerStreamRequest(
    STREAM,
    (b: Buffer) => b,
    (b: Buffer) => b,
    body,
    md(),
    {},
  );
  call.on('data', (b: Buffer) => messages.push(b));
  return new Promise((resolve) => {
    call.on('error', (e: grpc.ServiceError) => resolve({ code: e.code, messages }));
    call.on('status', (s: grpc.StatusObject) => {
      if (s.code === grpc.status.OK) resolve({ code: 0, messages });
    });
  });
}

describe.each(UPSTREAMS)(
  'a copy of a message answered with a Message, on gRPC (upstream: %s)',
  (_n, start, up) => {
    it.skipIf(!up)(
      'gets that Message again (SendMessage, a stream, JSON-RPC); the upstream runs it once',
      async () => {
        const upstream = await start();
        closers.push(() => upstream.close());
        const gw = await startGrpcGateway(upstream.baseUrl, { policies: [] });
        closers.push(gw.close);
        const client = rawClient(gw.grpcTarget);
        closers.push(() => client.close());

        const first = await rawUnary(client, SEND, sendRequestBytes('dm-1', 'hello'), md());
        expect(first.error).toBeUndefined();
        const answer = A2AService.sendMessage.responseDeserialize(
          first.answer as Buffer,
        ) as unknown as Decoded;
        expect(answer.payload?.$case).toBe('message');

        const copy = await rawUnary(client, SEND, sendRequestBytes('dm-1', 'hello'), md());
        expect(copy.error).toBeUndefined();
        const again = A2AService.sendMessage.responseDeserialize(copy.answer as Buffer);
        expect(again).toEqual(answer);

        const streamed = await streamOnce(client, sendRequestBytes('dm-1', 'hello'));
        expect(streamed.code).toBe(0);
        expect(streamed.messages).toHaveLength(1);
        expect(
          A2AService.sendStreamingMessage.responseDeserialize(streamed.messages[0] as Buffer),
        ).toEqual(answer);

        // The same Message in JSON form to a JSON-RPC copy.
        const rpc = (await (
          await fetch(`${gw.baseUrl}/a2a/jsonrpc`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'a2a-version': '1.0',
              authorization: 'Bearer mia',
            },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'SendMessage',
              params: {
                message: { messageId: 'dm-1', role: 'ROLE_USER', parts: [{ text: 'hello' }] },
              },
            }),
          })
        ).json()) as { result?: { message?: { messageId?: string } } };
        expect(rpc.result?.message?.messageId).toBe(answer.payload?.value.messageId);

        expect(await upstream.runs('dm-1')).toBe(1);
      },
    );
  },
);
