/**
 * The upstream's own gRPC refusal through the gateway: RESOURCE_EXHAUSTED / UNAVAILABLE with a
 * delay — a `retry-after` trailer, `grpc-retry-pushback-ms`, or a RetryInfo in
 * `grpc-status-details-bin`; sent as Trailers-Only or as headers then trailers — comes back as
 * our quota / overload rejection carrying that delay (ErrorInfo in the operator's domain, RetryInfo,
 * `retry-after`), like an upstream HTTP 429 `Retry-After: 3`; without a delay it passes through as
 * the agent wrote it. Upstreams: the SDK's agent and the stdlib Python agent (python3-grpcio).
 */

import * as grpc from '@grpc/grpc-js';
import { encodeStatus, type RatePolicy, REASONS } from 'a2a-ratelimit';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GrpcRefusal,
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
import { decodeGrpcRejection } from './rejection-wire.helpers.js';

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const DOMAIN = 'gw.example.test';
const python = pythonAgentSupport(true).available || pythonAgentRequired;

const perCaller: RatePolicy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage'],
  limit: 100,
  windowSeconds: 60,
  burst: 100,
};

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function md(): grpc.Metadata {
  const m = new grpc.Metadata();
  m.set('a2a-version', '1.0');
  m.set('authorization', 'Bearer ann');
  return m;
}

async function send(target: string, id: string): Promise<grpc.ServiceError> {
  const client = rawClient(target);
  closers.push(() => client.close());
  const { error } = await rawUnary(client, SEND, sendRequestBytes(id), md());
  expect(error).toBeDefined();
  return error as grpc.ServiceError;
}

function rejectionOf(error: grpc.ServiceError) {
  return decodeGrpcRejection(error.code, error.details, error.metadata.getMap());
}

const retryInfo = (seconds: number): Buffer =>
  Buffer.from(
    encodeStatus({
      code: grpc.status.RESOURCE_EXHAUSTED,
      message: 'busy',
      details: [
        { type: 'RetryInfo', message: { retryDelay: { seconds: BigInt(seconds), nanos: 0 } } },
      ],
    }),
  );

const CASES: readonly (readonly [string, GrpcRefusal, 'quota' | 'overload', number])[] = [
  [
    'RESOURCE_EXHAUSTED, grpc-retry-pushback-ms 2500, Trailers-Only',
    {
      code: grpc.status.RESOURCE_EXHAUSTED,
      details: 'slow down',
      metadata: { 'grpc-retry-pushback-ms': '2500' },
    },
    'quota',
    3,
  ],
  [
    'RESOURCE_EXHAUSTED, RetryInfo 4 s in grpc-status-details-bin, headers then trailers',
    {
      code: grpc.status.RESOURCE_EXHAUSTED,
      details: 'busy',
      metadata: { 'grpc-status-details-bin': retryInfo(4) },
      headersFirst: true,
    },
    'quota',
    4,
  ],
  [
    'UNAVAILABLE, retry-after 2, headers then trailers',
    {
      code: grpc.status.UNAVAILABLE,
      details: 'overloaded',
      metadata: { 'retry-after': '2' },
      headersFirst: true,
    },
    'overload',
    2,
  ],
];

describe('the upstream’s own gRPC refusal through the gateway (upstream: sdk)', () => {
  it.each(CASES)('%s → our rejection with its delay', async (_n, refusal, kind, seconds) => {
    const upstream = await startSdkGrpcUpstream();
    closers.push(() => upstream.close());
    const gw = await startGrpcGateway(upstream.baseUrl, {
      policies: [perCaller],
      limiter: { domain: DOMAIN },
    });
    closers.push(gw.close);
    upstream.refuse(refusal);

    const error = await send(gw.grpcTarget, 'm-1');
    expect(error.code).toBe(
      kind === 'quota' ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.UNAVAILABLE,
    );
    const decoded = rejectionOf(error);
    expect(decoded).toMatchObject({
      kind,
      reason: REASONS[kind],
      domain: DOMAIN,
      policy: 'upstream',
      delaySeconds: seconds,
    });
    expect(error.metadata.get('retry-after')).toEqual([String(seconds)]);
    expect(upstream.calls).toEqual(['SendMessage']);
  });

  it('without a delay, the refusal passes through as the agent wrote it', async () => {
    const upstream = await startSdkGrpcUpstream();
    closers.push(() => upstream.close());
    const gw = await startGrpcGateway(upstream.baseUrl, {
      policies: [perCaller],
      limiter: { domain: DOMAIN },
    });
    closers.push(gw.close);
    for (const headersFirst of [false, true]) {
      upstream.refuse({
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: 'no more today',
        metadata: { 'x-agent': 'said-so' },
        headersFirst,
      });
      const error = await send(gw.grpcTarget, `m-${headersFirst}`);
      expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(error.details).toBe('no more today');
      expect(error.metadata.get('x-agent')).toEqual(['said-so']);
      expect(error.metadata.get('grpc-status-details-bin')).toEqual([]);
      expect(rejectionOf(error)).toBeUndefined();
    }
  });
});

describe.skipIf(!python)(
  'the upstream’s own gRPC refusal through the gateway (upstream: python)',
  () => {
    it.each([
      [429, grpc.status.RESOURCE_EXHAUSTED, 'quota', 3],
      [503, grpc.status.UNAVAILABLE, 'overload', 2],
    ] as const)(
      'its %i-style refusal with retry-after → our rejection with that delay',
      async (status, code, kind, seconds) => {
        const agent = await startPythonAgent({ grpc: true });
        closers.push(() => agent.stop());
        const gw = await startGrpcGateway(agent.url, {
          policies: [perCaller],
          limiter: { domain: DOMAIN },
        });
        closers.push(gw.close);
        await agent.setMode({ reject: status, retryAfter: seconds });

        const error = await send(gw.grpcTarget, 'py-1');
        expect(error.code).toBe(code);
        expect(rejectionOf(error)).toMatchObject({
          kind,
          reason: REASONS[kind],
          domain: DOMAIN,
          policy: 'upstream',
          delaySeconds: seconds,
        });
        // The agent was asked (and refused); nothing ran.
        const counts = await agent.counts();
        expect(counts.byBinding.GRPC).toBe(1);
        expect(counts.runsByMessageId).toEqual({});
      },
    );
  },
);
