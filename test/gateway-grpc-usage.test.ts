/**
 * Usage charged from the agent's reports on gRPC through the gateway: the SDK's agent on gRPC and
 * the stdlib Python agent's gRPC server (python3-grpcio) report 4,000 tokens in each final Task's
 * (or final status update's) metadata; free (10,000/min) and pro (100,000/min) callers by API key;
 * the free caller's 4th task is refused RESOURCE_EXHAUSTED with exactly the delay until the budget
 * has refilled, the pro caller is unaffected — the report read from a SendMessage result and from
 * a SendStreamingMessage's final event.
 */

import * as grpc from '@grpc/grpc-js';
import type { Policy } from 'a2a-ratelimit';
import { ManualClock } from 'a2a-ratelimit/testing';
import { createIdentityResolver, identifyWith, parseIdentityConfig } from 'a2a-ratelimit-gateway';
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
const FREE_KEY = 'free-key-0123456789abcdef';
const PRO_KEY = 'pro-key-0123456789abcdefgh';
const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage', 'SendStreamingMessage'],
  tiers: {
    free: { limit: 10_000, windowSeconds: 60 },
    pro: { limit: 100_000, windowSeconds: 60 },
  },
  defaultTier: 'free',
  estimate: 2_000,
};
/** Three reports of 4,000 leave 2,000 of debt; the 4th needs its 2,000 estimate: 4,000 at 6 ms. */
const FOURTH_DELAY_MS = 24_000;

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function key(value: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('x-api-key', value);
  metadata.set('a2a-version', '1.0');
  return metadata;
}

interface Upstream {
  readonly baseUrl: string;
  /** SendMessage / SendStreamingMessage calls that reached it. */
  readonly sends: () => Promise<number>;
  close(): Promise<void>;
}

const python = pythonAgentSupport(true).available || pythonAgentRequired;
const UPSTREAMS: readonly (readonly [string, () => Promise<Upstream>, boolean])[] = [
  [
    'sdk',
    async () => {
      const upstream = await startSdkGrpcUpstream({ usageTokens: 4_000 });
      return {
        baseUrl: upstream.baseUrl,
        sends: async () =>
          upstream.calls.filter((c) => c === 'SendMessage' || c === 'SendStreamingMessage').length,
        close: () => upstream.close(),
      };
    },
    true,
  ],
  [
    'python',
    async () => {
      const agent = await startPythonAgent({ grpc: true, usageTokens: 4_000, answer: 'task' });
      return {
        baseUrl: agent.url,
        sends: async () => {
          const counts = await agent.counts();
          return Object.values(counts.runsByMessageId).reduce((a, b) => a + b, 0);
        },
        close: () => agent.stop(),
      };
    },
    python,
  ],
];

type Method = 'SendMessage' | 'SendStreamingMessage';
const METHODS: readonly Method[] = ['SendMessage', 'SendStreamingMessage'];

/** One call of `method`: undefined when it ended OK (a stream: after its terminal event), else its error. */
function callOnce(
  client: grpc.Client,
  method: Method,
  body: Buffer,
  metadata: grpc.Metadata,
): Promise<grpc.ServiceError | undefined> {
  if (method === 'SendMessage') return rawUnary(client, SEND, body, metadata).then((r) => r.error);
  return new Promise((resolve) => {
    const call = client.makeServerStreamRequest(
      STREAM,
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      metadata,
      {},
    );
    call.on('data', () => undefined);
    call.on('error', (e: grpc.ServiceError) => resolve(e));
    call.on('status', (s: grpc.StatusObject) => {
      if (s.code === grpc.status.OK) resolve(undefined);
    });
  });
}

describe.each(UPSTREAMS)(
  'usage charged from the agent’s reports on gRPC (upstream: %s)',
  (_n, start, up) => {
    it.skipIf(!up).each(METHODS)(
      '%s: 4,000 tokens a task → the free caller’s 4th task refused for exactly 24 s; the pro caller unaffected',
      async (method) => {
        const upstream = await start();
        closers.push(() => upstream.close());
        const resolver = await createIdentityResolver(
          parseIdentityConfig({
            apiKeys: [
              { key: FREE_KEY, caller: 'free-caller', tier: 'free' },
              { key: PRO_KEY, caller: 'pro-caller', tier: 'pro' },
            ],
          }),
          { baseDir: process.cwd() },
        );
        closers.push(() => resolver.close());
        const clock = new ManualClock(1_000_000);
        const ignored: unknown[] = [];
        const gw = await startGrpcGateway(upstream.baseUrl, {
          policies: [TOKENS],
          clock,
          gateway: {
            identify: identifyWith(() => resolver),
            usage: { path: 'metadata.usage.totalTokens', onIgnoredReport: (r) => ignored.push(r) },
          },
        });
        closers.push(gw.close);
        const client = rawClient(gw.grpcTarget);
        closers.push(() => client.close());
        let seq = 0;
        const send = (apiKey: string) =>
          callOnce(client, method, sendRequestBytes(`u-${method}-${++seq}`, 'task'), key(apiKey));

        for (let i = 0; i < 3; i++) expect(await send(FREE_KEY)).toBeUndefined();
        const fourth = await send(FREE_KEY);
        expect(fourth?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
        expect(fourth?.metadata.get('grpc-retry-pushback-ms')).toEqual([String(FOURTH_DELAY_MS)]);
        for (let i = 0; i < 6; i++) expect(await send(PRO_KEY)).toBeUndefined();

        clock.advance(FOURTH_DELAY_MS - 1);
        expect((await send(FREE_KEY))?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
        clock.advance(1);
        expect(await send(FREE_KEY)).toBeUndefined();
        expect(ignored).toEqual([]);
        // Every admitted task ran once upstream; no refused one reached it.
        expect(await upstream.sends()).toBe(3 + 6 + 1);
      },
    );
  },
);
