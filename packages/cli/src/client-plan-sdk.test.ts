/**
 * The planning client under the SDK's own clients, against the example research agent (the SDK
 * on loopback, our admission on every binding, its card carrying the rate-limit extension), one
 * scaled clock for both sides. The card the SDK's factory fetches goes through our fetch and is
 * learned there: one card request, no request per call. The README's policies (a rate,
 * `tasks-per-caller` max 5, the overload guard's in-flight cap; tasks of 1 s): 30 calls at once
 * cost 30 requests, none rejected,
 * never more than 5 tasks at once — streams included, counted until they end. A caller's
 * extended card (its tier) is learned from `GetExtendedAgentCard` on every binding.
 */

import { type AgentCard, SendMessageRequest } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import type { Policy } from 'a2a-ratelimit';
import { createRetryingFetch, RetryScheduler } from 'a2a-ratelimit/client';
import { createRetryInterceptor } from 'a2a-ratelimit/client/grpc';
import { RATE_LIMIT_EXTENSION_URI } from 'a2a-ratelimit/server';
import { afterEach, describe, expect, it } from 'vitest';
import { CARD_BINDING_NAMES, type CliBinding } from './cli-options.js';
import { runFanOut } from './fan-out-demo.js';
import {
  type AgentRequestEvent,
  type ResearchAgent,
  startResearchAgent,
} from './research-agent.js';
import { createScaledTime, type ScaledTime } from './scaled-time.js';

const BINDINGS = ['jsonrpc', 'rest', 'grpc'] as const;
const MESSAGES = ['SendMessage', 'SendStreamingMessage'] as const;
const README_POLICIES: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: [...MESSAGES],
    limit: 60,
    windowSeconds: 60,
    burst: 10,
  },
  {
    name: 'tasks-per-caller',
    kind: 'concurrency',
    scope: 'caller',
    methods: [...MESSAGES],
    max: 5,
  },
  // The README's overload guard, without its event-loop delay check: on a loaded test machine that
  // check refuses calls for the machine's lag, whatever the client does.
  { name: 'agent-overload', kind: 'overload', maxInFlight: 500 },
];

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

interface Setup {
  agent: ResearchAgent;
  time: ScaledTime;
  client: Client;
  events: AgentRequestEvent[];
  /** Every URL our fetch was asked for (card and A2A requests alike). */
  fetched: string[];
  scheduler: RetryScheduler;
}

async function setup(
  binding: CliBinding,
  options: {
    policies: readonly Policy[];
    taskMs?: number;
    extendedCard?: Parameters<typeof startResearchAgent>[0]['extendedCard'];
    /** Changes the public card the agent serves before the client fetches it. */
    publicCard?: (card: AgentCard) => void;
  },
): Promise<Setup> {
  const time = createScaledTime(10);
  const events: AgentRequestEvent[] = [];
  const agent = await startResearchAgent({
    policies: options.policies,
    clock: time.clock,
    domain: 'research.example.com',
    metrics: false,
    task: { durationMs: options.taskMs ?? 0, sleep: time.sleep },
    ...(options.extendedCard === undefined ? {} : { extendedCard: options.extendedCard }),
    onRequest: (event) => {
      if (event.method !== 'GetExtendedAgentCard') events.push(event);
    },
  });
  closers.push(() => agent.close());
  options.publicCard?.(agent.card);
  const fetched: string[] = [];
  const scheduler = new RetryScheduler({
    agentDeduplicates: true,
    clock: time.clock,
    sleep: time.sleep,
  });
  const fetchImpl = createRetryingFetch({
    scheduler,
    fetch: (input, init) => {
      fetched.push(String(input instanceof Request ? input.url : input));
      return fetch(input, init);
    },
  });
  const transports =
    binding === 'grpc'
      ? [
          new GrpcTransportFactory({
            grpcCallOptions: {
              interceptors: [createRetryInterceptor({ scheduler, agent: agent.grpcTarget })],
            },
          }),
        ]
      : [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })];
  const client = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports,
      preferredTransports: [CARD_BINDING_NAMES[binding]],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  ).createFromUrl(agent.baseUrl);
  return { agent, time, client, events, fetched, scheduler };
}

const auth = (caller: string) => ({
  serviceParameters: { authorization: `Bearer ${caller}` },
});

function message(id: string) {
  return SendMessageRequest.fromJSON({
    message: { messageId: id, role: 'ROLE_USER', parts: [{ text: `topic ${id}` }] },
  });
}

/**
 * `calls` SendMessage calls at once by `caller`, as the demo makes them: the clock stands still
 * until each call was either decided by the agent or is held by the client, so a busy machine
 * cannot spread "at once" over scaled seconds. Returns how many went at that instant.
 */
async function fanOutAtOnce(s: Setup, caller: string, calls: number): Promise<number> {
  const mine = () => s.events.filter((e) => e.caller === caller);
  const before = mine().length;
  s.time.freeze();
  const done = Promise.all(
    Array.from({ length: calls }, (_, i) =>
      s.client.sendMessage(message(`${caller}-${i}`), auth(caller)),
    ),
  );
  let atOnce = 0;
  await new Promise<void>((resolve) => {
    const watch = setInterval(() => {
      atOnce = mine().length - before;
      if (atOnce + s.scheduler.waiting < calls) return;
      clearInterval(watch);
      resolve();
    }, 1);
  });
  s.time.resume();
  await done;
  return atOnce;
}

describe.each(BINDINGS)('planned client on %s', (binding) => {
  it('README policies, 1 s tasks, 30 calls at once: 30 requests, 0 rejections, ≤ 5 tasks at once', async () => {
    const planned = await runFanOut({
      kind: 'planned',
      binding,
      timeScale: 10,
      policies: README_POLICIES,
      taskMs: 1_000,
    });
    const ours = await runFanOut({
      kind: 'ours',
      binding,
      timeScale: 10,
      policies: README_POLICIES,
      taskMs: 1_000,
    });
    console.log(`[README policies, ${binding}]`, {
      planned: {
        requests: planned.requestsSeenByAgent,
        rejected: planned.rejected + planned.rejectedRetries,
        peakTasks: planned.peakTasksRunning,
        s: planned.totalSeconds,
      },
      ours: {
        requests: ours.requestsSeenByAgent,
        rejected: ours.rejected + ours.rejectedRetries,
        peakTasks: ours.peakTasksRunning,
        s: ours.totalSeconds,
      },
    });
    expect(planned).toMatchObject({
      requestsSeenByAgent: 30,
      rejected: 0,
      rejectedRetries: 0,
      abandoned: 0,
      admittedAtOnce: 5,
      admittedPaced: 25,
    });
    expect(planned.peakTasksRunning).toBeLessThanOrEqual(5);
    expect(ours.requestsSeenByAgent).toBeGreaterThan(60);
  });

  it('streams count as in flight until they end: 6 streams at once, max 2, 0 rejections', async () => {
    const twoStreams: Policy[] = [
      { ...README_POLICIES[1], max: 2 } as Policy,
      README_POLICIES[0] as Policy,
    ];
    const s = await setup(binding, { policies: twoStreams, taskMs: 1_000 });
    const consume = async (id: string) => {
      let events = 0;
      for await (const _ of s.client.sendMessageStream(message(id), auth('streamer'))) events++;
      return events;
    };
    const counts = await Promise.all(Array.from({ length: 6 }, (_, i) => consume(`s-${i}`)));
    expect(counts.every((n) => n > 0)).toBe(true);
    expect(s.events).toHaveLength(6);
    expect(s.events.every((e) => e.outcome === 'admitted')).toBe(true);
    expect(s.agent.tasks.peak).toBe(2);
  });

  it('learns the card the factory fetched — one card request for 30 calls — and sends with no rejection', async () => {
    const s = await setup(binding, { policies: [README_POLICIES[0] as Policy] });
    expect(await fanOutAtOnce(s, 'o-7', 30)).toBe(10);
    const cardRequests = s.fetched.filter((u) => u.endsWith('/.well-known/agent-card.json'));
    expect(cardRequests).toHaveLength(1);
    expect(s.fetched).toHaveLength(binding === 'grpc' ? 1 : 31);
    expect(s.events).toHaveLength(30);
    expect(s.events.every((e) => e.outcome === 'admitted')).toBe(true);
  });

  it("a caller's extended card names its tier: after GetExtendedAgentCard it plans with the tier's burst", async () => {
    const free = { limit: 60, windowSeconds: 60, burst: 10 };
    const pro = { limit: 600, windowSeconds: 60, burst: 100 };
    const tiers = [
      { name: 'free', ...free },
      { name: 'pro', ...pro },
    ];
    /**
     * The extension's policy as a tiered agent would publish it (this package's server does not
     * yet): every tier and the default on the public card, the caller's own on its extended card.
     */
    const tieredParams = (params: Record<string, unknown>, own?: { tier: string }) => ({
      ...params,
      policies: [
        {
          ...(params.policies as Record<string, unknown>[])[0],
          ...(own === undefined ? free : { ...pro, ...own }),
          tiers,
          defaultTier: 'free',
        },
      ],
    });
    const extensionOf = (card: AgentCard) =>
      card.capabilities?.extensions.find((e) => e.uri === RATE_LIMIT_EXTENSION_URI);
    const s = await setup(binding, {
      // The agent lets every caller have the pro tier's numbers: what is measured is the plan.
      policies: [{ ...(README_POLICIES[0] as Policy), ...pro } as Policy],
      publicCard: (card) => {
        const e = extensionOf(card);
        if (e !== undefined) e.params = tieredParams(e.params ?? {});
      },
      extendedCard: (card, user) => {
        const e = extensionOf(card);
        const params = tieredParams(
          e?.params ?? {},
          user?.userName === 'pro-caller' ? { tier: 'pro' } : undefined,
        );
        return {
          ...card,
          capabilities: {
            ...card.capabilities,
            extensions: [{ ...(e as NonNullable<typeof e>), params }],
          } as AgentCard['capabilities'],
        };
      },
    });
    const card = await s.client.getAgentCard(auth('pro-caller'));
    expect(JSON.stringify(card)).toContain('"tier":"pro"');
    expect(await fanOutAtOnce(s, 'pro-caller', 30)).toBe(30);
    // Another caller of the same client has only the public card: the default tier's burst…
    expect(await fanOutAtOnce(s, 'free-caller', 30)).toBe(10);
    expect(s.events).toHaveLength(60);
    expect(s.events.every((e) => e.outcome === 'admitted')).toBe(true);
    // …until the first answer's RateLimit-Policy (q=600;w=60, the pro tier's numbers, which this
    // agent gives everyone) retunes its plan: the other 20 did not wait 20 s at the free pace.
    const freeTimes = s.events.filter((e) => e.caller === 'free-caller').map((e) => e.atMs);
    expect(Math.max(...freeTimes) - Math.min(...freeTimes)).toBeLessThan(10_000);
  });
});
