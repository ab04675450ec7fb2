/**
 * Each caller's own limits on the extended card, through the gateway engine: GetExtendedAgentCard
 * (JSON-RPC method and REST route) reaches the upstream with the caller's credentials, and its
 * card comes back with the interfaces on the gateway and exactly the rate-limit extension the
 * library builds in-process for that caller (`withRateLimitExtension` with its caller and tier): a
 * free and a pro caller (API keys with tiers, the identity module) each see their own tier and
 * limits. An upstream without an extended card: its error passes through untouched. Upstreams:
 * the SDK's agent and the stdlib Python agent.
 */

import type { Policy } from 'a2a-ratelimit';
import { RATE_LIMIT_EXTENSION_URI, withRateLimitExtension } from 'a2a-ratelimit/server';
import {
  createIdentityResolver,
  type IdentityResolver,
  identifyWith,
  parseIdentityConfig,
} from 'a2a-ratelimit-gateway';
import { afterEach, describe, expect, it } from 'vitest';
import { startSdkUpstream, startTestGateway, type TestGateway } from './gateway.helpers.js';
import {
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';

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

type Binding = 'JSONRPC' | 'HTTP+JSON';
const BINDINGS: readonly Binding[] = ['JSONRPC', 'HTTP+JSON'];

interface Upstream {
  readonly baseUrl: string;
  /** The upstream's card name for the caller with this key (its extended card). */
  readonly extendedName: (key: string) => string;
  /** Authorization values the upstream received, when it counts them. */
  readonly authorizations?: () => Promise<Record<string, number>>;
  close(): Promise<void>;
}

const python = pythonAgentSupport();
const UPSTREAMS: readonly (readonly [string, () => Promise<Upstream>, boolean])[] = [
  [
    'sdk',
    async () => {
      const upstream = await startSdkUpstream({ extendedCard: true });
      return {
        baseUrl: upstream.baseUrl,
        // The SDK's provider names the user it was called as: the caller's own credentials.
        extendedName: (key) => `upstream (extended for ${key})`,
        close: () => upstream.close(),
      };
    },
    true,
  ],
  [
    'python',
    async () => {
      const agent = await startPythonAgent();
      return {
        baseUrl: agent.url,
        extendedName: () => 'python-stdlib-agent (extended)',
        authorizations: async () => (await agent.counts()).byAuthorization,
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

async function gatewayIn(front: string): Promise<TestGateway> {
  const resolver: IdentityResolver = await createIdentityResolver(
    parseIdentityConfig({
      apiKeys: [
        { key: FREE_KEY, caller: 'free-caller', tier: 'free' },
        { key: PRO_KEY, caller: 'pro-caller', tier: 'pro' },
      ],
    }),
  );
  closers.push(() => resolver.close());
  const gw = await startTestGateway(front, {
    policies: POLICIES,
    gateway: { identify: identifyWith(() => resolver) },
  });
  closers.push(() => gw.close());
  return gw;
}

interface Answer {
  readonly status: number;
  readonly text: string;
}

/** GetExtendedAgentCard at `base` (the gateway, or the upstream directly). */
async function getExtendedCard(
  base: string,
  binding: Binding,
  key: string | undefined,
): Promise<Answer> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'a2a-version': '1.0',
    ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
  };
  const response =
    binding === 'JSONRPC'
      ? await fetch(`${base}/a2a/jsonrpc`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'GetExtendedAgentCard' }),
        })
      : await fetch(`${base}/a2a/rest/extendedAgentCard`, { headers });
  return { status: response.status, text: await response.text() };
}

interface Card {
  readonly name: string;
  readonly supportedInterfaces: readonly { readonly url: string }[];
  readonly capabilities: { readonly extensions?: readonly { readonly uri: string }[] };
}

function cardOf(binding: Binding, answer: Answer): Card {
  expect(answer.status).toBe(200);
  const body = JSON.parse(answer.text) as Card & { result?: Card; error?: unknown };
  if (binding === 'HTTP+JSON') return body;
  expect(body.error).toBeUndefined();
  return body.result as Card;
}

function extensionOf(card: Card): unknown {
  const found = card.capabilities.extensions?.filter((e) => e.uri === RATE_LIMIT_EXTENSION_URI);
  expect(found).toHaveLength(1);
  return found?.[0];
}

describe.each(UPSTREAMS)(
  'the extended card through the gateway (upstream: %s)',
  (_n, start, up) => {
    it.skipIf(!up).each(BINDINGS)(
      '%s: a free and a pro caller each see their own tier and limits',
      async (binding) => {
        const upstream = await start();
        closers.push(() => upstream.close());
        const gw = await gatewayIn(upstream.baseUrl);

        const free = cardOf(binding, await getExtendedCard(gw.baseUrl, binding, FREE_KEY));
        const pro = cardOf(binding, await getExtendedCard(gw.baseUrl, binding, PRO_KEY));
        // The upstream's own extended card, asked with each caller's credentials.
        expect(free.name).toBe(upstream.extendedName(FREE_KEY));
        expect(pro.name).toBe(upstream.extendedName(PRO_KEY));
        if (upstream.authorizations !== undefined) {
          const seen = await upstream.authorizations();
          expect(seen[`Bearer ${FREE_KEY}`]).toBe(1);
          expect(seen[`Bearer ${PRO_KEY}`]).toBe(1);
        }
        // Its interfaces are the gateway's.
        expect(free.supportedInterfaces.length).toBeGreaterThan(0);
        for (const i of [...free.supportedInterfaces, ...pro.supportedInterfaces]) {
          if (/\/a2a\/(jsonrpc|rest)$/.test(i.url)) expect(i.url.startsWith(gw.baseUrl)).toBe(true);
        }

        // Exactly the extension the library builds in-process for each caller.
        const freeExt = extensionOf(free);
        const proExt = extensionOf(pro);
        const inProcess = (caller: string, tier: string): unknown => {
          const card: { capabilities?: { extensions?: readonly unknown[] } } = {};
          const built = withRateLimitExtension(card, gw.limiter, { caller, tier });
          return JSON.parse(JSON.stringify(built.capabilities?.extensions?.[0]));
        };
        expect(freeExt).toEqual(inProcess('free-caller', 'free'));
        expect(proExt).toEqual(inProcess('pro-caller', 'pro'));
        // … which states each one's own tier and limits.
        type Params = {
          params: {
            callerTier: string;
            policies: { name: string; tier: string; limit: number; burst: number }[];
          };
        };
        const limitsOf = (ext: unknown) =>
          (ext as Params).params.policies.map((p) => [p.name, p.tier, p.limit, p.burst]);
        expect((freeExt as Params).params.callerTier).toBe('free');
        expect(limitsOf(freeExt)).toEqual([
          ['per-caller', 'free', 60, 10],
          ['tokens', 'free', 10_000, 10_000],
        ]);
        expect((proExt as Params).params.callerTier).toBe('pro');
        expect(limitsOf(proExt)).toEqual([
          ['per-caller', 'pro', 600, 100],
          ['tokens', 'pro', 100_000, 100_000],
        ]);

        // The public card states no caller's tier.
        const publicCard = (await (
          await fetch(`${gw.baseUrl}/.well-known/agent-card.json`)
        ).json()) as Card;
        const publicExt = extensionOf(publicCard) as { params: Record<string, unknown> };
        expect(publicExt.params.callerTier).toBeUndefined();
      },
    );
  },
);

describe('an upstream without an extended card (upstream: sdk)', () => {
  it.each(BINDINGS)('%s: its error passes through untouched', async (binding) => {
    const upstream = await startSdkUpstream();
    closers.push(() => upstream.close());
    const gw = await gatewayIn(upstream.baseUrl);
    const direct = await getExtendedCard(upstream.baseUrl, binding, FREE_KEY);
    const through = await getExtendedCard(gw.baseUrl, binding, FREE_KEY);
    if (binding === 'HTTP+JSON') expect(direct.status).toBeGreaterThanOrEqual(400);
    expect(through.status).toBe(direct.status);
    expect(through.text).toBe(direct.text);
    expect(through.text).toMatch(/error/i);
  });
});
