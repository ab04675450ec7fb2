/**
 * Each caller's own limits on the extended card over gRPC through the gateway engine:
 * `GetExtendedAgentCard` reaches the upstream with the caller's credentials, and its `AgentCard`
 * message comes back (decoded here with the SDK's own service definition) with its interfaces on
 * the gateway (the gRPC one on the gateway's gRPC target) and exactly the rate-limit extension the
 * library builds in-process for that caller: a free and a pro caller (API keys with tiers) each
 * see their own tier and limits; the upstream's other extensions and fields are kept, a stale
 * copy of the rate-limit extension replaced; an upstream without an extended card: its error
 * passes through untouched. Upstreams: the SDK's agent and the stdlib Python agent
 * (python3-grpcio).
 */

import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { Policy } from 'a2a-ratelimit';
import { RATE_LIMIT_EXTENSION_URI, withRateLimitExtension } from 'a2a-ratelimit/server';
import {
  createIdentityResolver,
  type IdentityResolver,
  identifyWith,
  parseIdentityConfig,
} from 'a2a-ratelimit-gateway';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GrpcTestGateway,
  rawClient,
  rawUnary,
  startGrpcGateway,
  startSdkGrpcUpstream,
  UPSTREAM_EXTENSIONS,
} from './gateway-grpc.helpers.js';
import {
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';

const CARD = '/lf.a2a.v1.A2AService/GetExtendedAgentCard';
const FREE_KEY = 'free-key-0123456789abcdef';
const PRO_KEY = 'pro-key-0123456789abcdefgh';

const POLICIES: readonly Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    methods: ['SendMessage'],
    defaultTier: 'free',
    tiers: {
      free: { limit: 60, windowSeconds: 60, burst: 10 },
      pro: { limit: 600, windowSeconds: 60, burst: 100 },
    },
  },
  {
    name: 'tokens',
    kind: 'rate',
    unit: 'tokens',
    methods: ['SendMessage', 'SendStreamingMessage'],
    defaultTier: 'free',
    tiers: {
      free: { limit: 10_000, windowSeconds: 60 },
      pro: { limit: 100_000, windowSeconds: 60 },
    },
  },
];

interface Upstream {
  readonly baseUrl: string;
  readonly grpcTarget: string;
  /** The upstream's card name for the caller with this key (its extended card). */
  readonly extendedName: (key: string) => string;
  /** Extensions the upstream's own extended card carries (besides a rate-limit one). */
  readonly ownExtensions: readonly string[];
  close(): Promise<void>;
}

const python = pythonAgentSupport(true);
const UPSTREAMS: readonly (readonly [string, () => Promise<Upstream>, boolean])[] = [
  [
    'sdk',
    async () => {
      const upstream = await startSdkGrpcUpstream({ extendedCard: true });
      return {
        baseUrl: upstream.baseUrl,
        grpcTarget: upstream.grpcTarget,
        // The SDK's provider names the user it was called as: the caller's own credentials.
        extendedName: (key) => `upstream (extended for ${key})`,
        ownExtensions: [UPSTREAM_EXTENSIONS[0].uri],
        close: () => upstream.close(),
      };
    },
    true,
  ],
  [
    'python',
    async () => {
      const agent = await startPythonAgent({ grpc: true });
      return {
        baseUrl: agent.url,
        grpcTarget: agent.grpcTarget as string,
        extendedName: () => 'python-stdlib-agent (extended)',
        ownExtensions: [],
        close: () => agent.stop(),
      };
    },
    python.available || pythonAgentRequired,
  ],
];

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function gatewayIn(front: string): Promise<GrpcTestGateway> {
  const resolver: IdentityResolver = await createIdentityResolver(
    parseIdentityConfig({
      apiKeys: [
        { key: FREE_KEY, caller: 'free-caller', tier: 'free' },
        { key: PRO_KEY, caller: 'pro-caller', tier: 'pro' },
      ],
    }),
  );
  closers.push(() => resolver.close());
  const gw = await startGrpcGateway(front, {
    policies: POLICIES,
    gateway: { identify: identifyWith(() => resolver) },
  });
  closers.push(() => gw.close());
  return gw;
}

interface Extension {
  readonly uri: string;
  readonly description: string;
  readonly required: boolean;
  readonly params: Record<string, unknown> | undefined;
}

interface Card {
  readonly name: string;
  readonly description: string;
  readonly version: string;
  readonly supportedInterfaces: readonly {
    readonly url: string;
    readonly protocolBinding: string;
  }[];
  readonly capabilities: {
    readonly streaming?: boolean;
    readonly extendedAgentCard?: boolean;
    readonly extensions: readonly Extension[];
  };
  readonly defaultInputModes: readonly string[];
  readonly skills: readonly { readonly id: string }[];
}

/** GetExtendedAgentCard at a gRPC target with a caller's key: the decoded card. */
async function extendedCard(target: string, key: string): Promise<Card> {
  const client = rawClient(target);
  closers.push(() => client.close());
  const metadata = new grpc.Metadata();
  metadata.set('a2a-version', '1.0');
  metadata.set('authorization', `Bearer ${key}`);
  const body = A2AService.getExtendedAgentCard.requestSerialize({ tenant: '' } as never);
  const { error, answer } = await rawUnary(client, CARD, body, metadata);
  expect(error).toBeUndefined();
  return A2AService.getExtendedAgentCard.responseDeserialize(answer as Buffer) as unknown as Card;
}

/** The rate-limit extension the library builds in-process for a caller, in its JSON form. */
function inProcess(gw: GrpcTestGateway, caller: string, tier: string): Record<string, unknown> {
  const card: { capabilities?: { extensions?: readonly unknown[] } } = {};
  const built = withRateLimitExtension(card, gw.limiter, { caller, tier });
  return JSON.parse(JSON.stringify(built.capabilities?.extensions?.[0]));
}

describe.each(UPSTREAMS)(
  'the extended card over gRPC through the gateway (upstream: %s)',
  (_n, start, up) => {
    it.skipIf(!up)('a free and a pro caller each see their own tier and limits', async () => {
      const upstream = await start();
      closers.push(() => upstream.close());
      const gw = await gatewayIn(upstream.baseUrl);

      const free = await extendedCard(gw.grpcTarget, FREE_KEY);
      const pro = await extendedCard(gw.grpcTarget, PRO_KEY);
      const direct = await extendedCard(upstream.grpcTarget, FREE_KEY);

      // The upstream's own extended card, asked with each caller's credentials; every field of it
      // but the interface URLs and the rate-limit extension as the upstream wrote it.
      expect(free.name).toBe(upstream.extendedName(FREE_KEY));
      expect(pro.name).toBe(upstream.extendedName(PRO_KEY));
      expect(free.description).toBe(direct.description);
      expect(free.version).toBe(direct.version);
      expect(free.defaultInputModes).toEqual(direct.defaultInputModes);
      expect(free.skills).toEqual(direct.skills);
      expect(free.capabilities.streaming).toBe(direct.capabilities.streaming);
      expect(free.capabilities.extendedAgentCard).toBe(true);

      // Its interfaces are the gateway's: the gRPC one its gRPC target, the HTTP ones its base.
      expect(free.supportedInterfaces.map((i) => i.protocolBinding)).toEqual(
        direct.supportedInterfaces.map((i) => i.protocolBinding),
      );
      const grpcUrls = free.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC');
      expect(grpcUrls.map((i) => i.url)).toEqual([gw.grpcTarget]);
      for (const i of free.supportedInterfaces) {
        if (i.protocolBinding !== 'GRPC') expect(i.url.startsWith(gw.baseUrl)).toBe(true);
      }

      // The same caller's extended card over JSON-RPC names the same gRPC target.
      const publicCard = (await (
        await fetch(`${gw.baseUrl}/.well-known/agent-card.json`)
      ).json()) as Card;
      const jsonRpcUrl = publicCard.supportedInterfaces.find(
        (i) => i.protocolBinding === 'JSONRPC',
      )?.url;
      expect(jsonRpcUrl).toBeDefined();
      const overHttp = await fetch(jsonRpcUrl as string, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'a2a-version': '1.0',
          authorization: `Bearer ${FREE_KEY}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard' }),
      });
      expect(overHttp.status).toBe(200);
      const httpCard = ((await overHttp.json()) as { result: Card }).result;
      expect(
        httpCard.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC').map((i) => i.url),
      ).toEqual([gw.grpcTarget]);

      // The upstream's other extensions kept in order; one rate-limit extension, the caller's.
      for (const card of [free, pro]) {
        expect(card.capabilities.extensions.map((e) => e.uri)).toEqual([
          ...upstream.ownExtensions,
          RATE_LIMIT_EXTENSION_URI,
        ]);
      }
      if (upstream.ownExtensions.length > 0) {
        expect(free.capabilities.extensions[0]).toMatchObject(UPSTREAM_EXTENSIONS[0]);
      }
      const freeExt = free.capabilities.extensions.at(-1) as Extension;
      const proExt = pro.capabilities.extensions.at(-1) as Extension;
      const freeBuilt = inProcess(gw, 'free-caller', 'free');
      const proBuilt = inProcess(gw, 'pro-caller', 'pro');
      expect(freeExt.params).toEqual(freeBuilt.params);
      expect(proExt.params).toEqual(proBuilt.params);
      expect(freeExt.description).toBe(freeBuilt.description ?? '');

      // … which states each one's own tier and limits.
      type Params = {
        callerTier: string;
        policies: { name: string; tier: string; limit: number; burst: number }[];
      };
      const limitsOf = (ext: Extension) =>
        (ext.params as Params).policies.map((p) => [p.name, p.tier, p.limit, p.burst]);
      expect((freeExt.params as Params).callerTier).toBe('free');
      expect(limitsOf(freeExt)).toEqual([
        ['per-caller', 'free', 60, 10],
        ['tokens', 'free', 10_000, 10_000],
      ]);
      expect((proExt.params as Params).callerTier).toBe('pro');
      expect(limitsOf(proExt)).toEqual([
        ['per-caller', 'pro', 600, 100],
        ['tokens', 'pro', 100_000, 100_000],
      ]);
    });
  },
);

describe('an upstream without an extended card, over gRPC (upstream: sdk)', () => {
  it('its error passes through as the agent wrote it', async () => {
    const upstream = await startSdkGrpcUpstream();
    closers.push(() => upstream.close());
    const gw = await gatewayIn(upstream.baseUrl);
    const ask = async (target: string) => {
      const client = rawClient(target);
      closers.push(() => client.close());
      const metadata = new grpc.Metadata();
      metadata.set('a2a-version', '1.0');
      metadata.set('authorization', `Bearer ${FREE_KEY}`);
      const body = A2AService.getExtendedAgentCard.requestSerialize({ tenant: '' } as never);
      return (await rawUnary(client, CARD, body, metadata)).error;
    };
    const direct = await ask(upstream.grpcTarget);
    const through = await ask(gw.grpcTarget);
    expect(direct).toBeDefined();
    expect(through?.code).toBe(direct?.code);
    expect(through?.details).toBe(direct?.details);
    expect(through?.metadata.get('grpc-status-details-bin')).toEqual(
      direct?.metadata.get('grpc-status-details-bin'),
    );
  });
});
