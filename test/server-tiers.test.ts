/**
 * Tiers in front of the real SDK server on all three bindings: a free and a pro caller flood the
 * same tiered policy and each gets its own burst and delay; the rejection names policy and tier
 * on the wire; `RateLimit-Policy` shows the caller's own q/w; the public card lists every tier
 * and each caller's extended card (GetExtendedAgentCard) states its own tier and limits. The tier
 * comes from the authenticated caller (`tierOf`), never from a header.
 */

import type { Policy } from 'a2a-ratelimit';
import { RATE_LIMIT_EXTENSION_URI } from 'a2a-ratelimit/server';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimitParams } from './rate-limit-card.helpers.js';
import {
  type DecodedRejection,
  decodeGrpcRejection,
  decodeJsonRpcRejection,
  decodeRestRejection,
} from './rejection-wire.helpers.js';
import { as, startAgent, type TestAgent, userMessage } from './server-agent.helpers.js';

const tiered: Policy = {
  name: 'per-caller',
  kind: 'rate',
  methods: ['SendMessage', 'SendStreamingMessage'],
  tiers: {
    free: { limit: 60, windowSeconds: 60, burst: 2 },
    pro: { limit: 600, windowSeconds: 60, burst: 5 },
  },
  defaultTier: 'free',
};

let agent: TestAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

type Seen = { status: number; headers: Headers; body: string };

function recordingFetch(seen: Seen[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    seen.push({ status: res.status, headers: res.headers, body: await res.clone().text() });
    return res;
  };
}

function grpcRejection(error: unknown): DecodedRejection | undefined {
  const e = error as {
    cause?: { code: number; details: string; metadata: { getMap(): Record<string, unknown> } };
  };
  return e.cause?.metadata === undefined
    ? undefined
    : decodeGrpcRejection(e.cause.code, e.cause.details, e.cause.metadata.getMap() as never);
}

const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const;

describe('tiers on every binding', () => {
  it('give free and pro callers their own burst and delay, named on the wire, with their own cards', async () => {
    agent = await startAgent({
      policies: [tiered],
      // The authenticated caller's tier (a real agent would look the user up).
      limiter: { tierOf: (r) => (r.caller.startsWith('pro-') ? 'pro' : undefined) },
    });
    for (const binding of BINDINGS) {
      const seen: Seen[] = [];
      const client = await agent.client(binding, recordingFetch(seen));
      for (const [caller, burst, tier, delaySeconds] of [
        [`free-${binding}`, 2, 'free', 1],
        [`pro-${binding}`, 5, 'pro', 1],
      ] as const) {
        let admitted = 0;
        const rejections: DecodedRejection[] = [];
        for (let i = 0; i < burst + 1; i++) {
          try {
            await client.sendMessage(
              { message: userMessage(`${caller}-m${i}`), tenant: '' } as never,
              // A header claiming a tier changes nothing: tiers come from tierOf.
              {
                ...as(caller),
                serviceParameters: { ...as(caller).serviceParameters, 'x-tier': 'pro' },
              },
            );
            admitted++;
            if (binding !== 'GRPC') {
              const last = seen.at(-1) as Seen;
              const w = tier === 'pro' ? 'q=600;w=60' : 'q=60;w=60';
              expect(last.headers.get('ratelimit-policy')).toBe(`"per-caller";${w}`);
            }
          } catch (error) {
            const last = seen.at(-1) as Seen;
            const decoded =
              binding === 'GRPC'
                ? grpcRejection(error)
                : binding === 'JSONRPC'
                  ? decodeJsonRpcRejection(last.status, last.headers, last.body)
                  : decodeRestRejection(last.status, last.headers, last.body);
            expect(decoded, `${binding} ${caller}`).toBeDefined();
            rejections.push(decoded as DecodedRejection);
          }
        }
        expect(admitted, `${binding} ${caller}`).toBe(burst);
        expect(
          rejections.map((r) => [r.policy, r.tier, r.quotaValue, r.delaySeconds]),
          `${binding} ${caller}`,
        ).toEqual([['per-caller', tier, tier === 'pro' ? 600 : 60, delaySeconds]]);

        const extended = await client.getAgentCard(as(caller));
        const extensions = (extended.capabilities?.extensions ?? []) as {
          uri: string;
          params: Record<string, unknown>;
        }[];
        const ext = extensions.find((e) => e.uri === RATE_LIMIT_EXTENSION_URI);
        // A caller with no tier of its own is measured by each policy's default tier.
        expect(ext?.params.callerTier).toBe(tier === 'pro' ? 'pro' : undefined);
        const read = rateLimitParams(extended);
        expect(read?.policies[0]).toMatchObject({
          name: 'per-caller',
          tier,
          limit: tier === 'pro' ? 600 : 60,
          burst,
        });
      }
    }
    // The public card lists every tier and the default.
    const publicCard = (await (
      await fetch(`${agent.baseUrl}/.well-known/agent-card.json`)
    ).json()) as { capabilities: { extensions: unknown[] } };
    const read = rateLimitParams(publicCard);
    expect(read?.policies[0]).toMatchObject({
      name: 'per-caller',
      limit: 60,
      burst: 2,
      tiers: [
        { name: 'free', limit: 60, windowSeconds: 60, burst: 2 },
        { name: 'pro', limit: 600, windowSeconds: 60, burst: 5 },
      ],
    });
    const raw = (
      publicCard.capabilities.extensions as { uri: string; params: { policies: unknown[] } }[]
    ).find((e) => e.uri === RATE_LIMIT_EXTENSION_URI);
    expect(raw?.params.policies[0]).toMatchObject({ defaultTier: 'free' });
    expect(raw?.params.policies[0]).not.toHaveProperty('tier');
  });
});
