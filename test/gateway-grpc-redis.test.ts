/**
 * gRPC deduplication across two gateways on one Redis, in front of one upstream (no limiter of
 * ours): a copy of a messageId admitted through one gateway, sent to the other, never reaches the
 * upstream again — while the first copy runs it is UNAVAILABLE `MESSAGE_IN_PROGRESS`, afterwards
 * it gets the first copy's task (GetTask on the upstream). Upstreams: the SDK's agent on gRPC and
 * the stdlib Python agent's gRPC server (python3-grpcio).
 */

import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { decodeStatus, type Policy } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { textMessage } from 'a2a-ratelimit/testing';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  connectRedis,
  deletePrefix,
  probeRedis,
  REDIS_URL,
  requireOrSkip,
  runPrefix,
} from './fixtures/redis/redis-env.js';
import {
  type GrpcTestGateway,
  rawClient,
  rawUnary,
  startGrpcGateway,
  startSdkGrpcUpstream,
} from './gateway-grpc.helpers.js';
import {
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const POLICIES: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage'],
    limit: 60,
    windowSeconds: 60,
    burst: 10,
  },
];

interface Upstream {
  readonly baseUrl: string;
  /** Runs of a messageId. */
  runs(messageId: string): Promise<number>;
  /** gRPC calls that reached it, by rpc name. */
  calls(): Promise<Record<string, number>>;
  releaseHeld(): Promise<void>;
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
        calls: async () => {
          const out: Record<string, number> = {};
          for (const c of upstream.calls) out[c] = (out[c] ?? 0) + 1;
          return out;
        },
        releaseHeld: async () => upstream.releaseHeld(),
        close: () => upstream.close(),
      };
    },
    true,
  ],
  [
    'python',
    async () => {
      const agent = await startPythonAgent({ grpc: true, answer: 'by-text', blocking: true });
      return {
        baseUrl: agent.url,
        runs: async (id) => (await agent.counts()).runsByMessageId[id] ?? 0,
        calls: async () => {
          const out: Record<string, number> = {};
          for (const r of await agent.requests()) {
            if (r.binding !== 'GRPC') continue;
            const rpc = r.path.split('/').pop() as string;
            out[rpc] = (out[rpc] ?? 0) + 1;
          }
          return out;
        },
        releaseHeld: () => agent.releaseHeld(),
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

function md(caller: string): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('a2a-version', '1.0');
  m.set('authorization', `Bearer ${caller}`);
  return m;
}

function request(messageId: string, text: string): Buffer {
  return A2AService.sendMessage.requestSerialize({
    tenant: '',
    message: textMessage({ messageId, text }),
  } as never);
}

interface Decoded {
  payload?: { $case: string; value: { id?: string; status?: { state: number } } };
}
const decodeSend = (b: Buffer) =>
  A2AService.sendMessage.responseDeserialize(b) as unknown as Decoded;

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe.skipIf(!redisUp).each(UPSTREAMS)(
  'gRPC deduplication across two gateways on one Redis (upstream: %s)',
  (_n, start, up) => {
    it.skipIf(!up)(
      'a copy sent to the other gateway never reaches the upstream: in flight MESSAGE_IN_PROGRESS, afterwards the first copy’s task',
      async () => {
        const upstream = await start();
        closers.push(() => upstream.close());
        const prefix = runPrefix('gateway-grpc');
        const redis: Redis[] = [];
        closers.push(async () => {
          const cleanup = await connectRedis();
          await deletePrefix(cleanup, prefix);
          cleanup.disconnect();
          for (const c of redis) c.disconnect();
        });
        const onRedis = async (): Promise<GrpcTestGateway> => {
          const client = await connectRedis();
          redis.push(client);
          const store = new RedisStore({
            client,
            policies: POLICIES,
            keyPrefix: prefix,
            onError: 'fail-closed',
            // A slow Redis on a loaded machine is not what these tests are about: no 50 ms refusals.
            timeoutMs: 5_000,
          });
          const gw = await startGrpcGateway(upstream.baseUrl, {
            policies: POLICIES,
            limiter: { store },
          });
          closers.push(gw.close);
          return gw;
        };
        const [one, two] = [await onRedis(), await onRedis()];
        const [c1, c2] = [rawClient(one.grpcTarget), rawClient(two.grpcTarget)];
        closers.push(() => c1.close());
        closers.push(() => c2.close());

        // A message held WORKING through gateway one; its copy through gateway two meanwhile.
        const first = rawUnary(c1, SEND, request('x-1', 'hold'), md('hal'));
        await until(async () => (await upstream.runs('x-1')) === 1);
        const early = await rawUnary(c2, SEND, request('x-1', 'hold'), md('hal'));
        expect(early.error?.code).toBe(grpc.status.UNAVAILABLE);
        const [bin] = (early.error?.metadata.get('grpc-status-details-bin') ?? []) as Buffer[];
        expect(decodeStatus(bin as Buffer).details).toContainEqual({
          type: 'ErrorInfo',
          message: expect.objectContaining({ reason: 'MESSAGE_IN_PROGRESS' }),
        });

        // Once it has completed, the copy through gateway two gets the first copy's task.
        await upstream.releaseHeld();
        const done = await first;
        expect(done.error).toBeUndefined();
        const task = decodeSend(done.answer as Buffer);
        expect(task.payload?.value.status?.state).toBe(3);
        const late = await rawUnary(c2, SEND, request('x-1', 'hold'), md('hal'));
        expect(late.error).toBeUndefined();
        const copy = decodeSend(late.answer as Buffer);
        expect(copy.payload?.$case).toBe('task');
        expect(copy.payload?.value.id).toBe(task.payload?.value.id);
        expect(copy.payload?.value.status?.state).toBe(3);

        // The upstream ran it once and saw one SendMessage; the copy was answered by GetTask.
        expect(await upstream.runs('x-1')).toBe(1);
        const calls = await upstream.calls();
        expect(calls.SendMessage).toBe(1);
        expect(calls.GetTask).toBeGreaterThanOrEqual(1);
      },
    );
  },
);
