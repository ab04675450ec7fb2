/**
 * Usage charged from the agent's reports on gRPC through the gateway: the SDK's agent on gRPC
 * reports 4,000 tokens in each final Task's metadata; free (10,000/min) and pro (100,000/min)
 * callers by API key; the free caller's 4th SendMessage is refused RESOURCE_EXHAUSTED with exactly
 * the delay until the budget has refilled, the pro caller is unaffected.
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

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
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

describe('usage charged from the agent’s reports on gRPC (upstream: sdk)', () => {
  it('4,000 tokens a task → the free caller’s 4th task refused for exactly 24 s; the pro caller unaffected', async () => {
    const upstream = await startSdkGrpcUpstream({ usageTokens: 4_000 });
    closers.push(upstream.close);
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
      rawUnary(client, SEND, sendRequestBytes(`u-${++seq}`, 'task'), key(apiKey));

    for (let i = 0; i < 3; i++) expect((await send(FREE_KEY)).error).toBeUndefined();
    const fourth = await send(FREE_KEY);
    expect(fourth.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(fourth.error?.metadata.get('grpc-retry-pushback-ms')).toEqual([String(FOURTH_DELAY_MS)]);
    for (let i = 0; i < 6; i++) expect((await send(PRO_KEY)).error).toBeUndefined();

    clock.advance(FOURTH_DELAY_MS - 1);
    expect((await send(FREE_KEY)).error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    clock.advance(1);
    expect((await send(FREE_KEY)).error).toBeUndefined();
    expect(ignored).toEqual([]);
    // Every admitted task ran once upstream; no refused one reached it.
    expect(upstream.calls.filter((c) => c === 'SendMessage')).toHaveLength(3 + 6 + 1);
  });
});
