/**
 * Usage charged from the agent's own reports, through the gateway engine: a token budget of
 * 10,000 tokens/min for the free tier and 100,000 for the pro tier (estimate 2,000), callers
 * named by API keys with tiers (the identity module), the upstream reporting 4,000 tokens per task
 * in `metadata.usage.totalTokens` — read from SendMessage results and from a stream's final
 * event, on JSON-RPC and REST, against the SDK's agent and the stdlib Python agent. The free
 * caller's 4th task is refused with the exact delay until the 4,000 tokens it lacks (its 2,000 of
 * debt and the 2,000 the next admission reserves) have refilled at 6 ms a token; the pro caller is
 * not. A task that never reports keeps its estimate; a report that is not a number is ignored and
 * counted. The limiter runs on a manual clock, so every delay is exact.
 */

import type { Policy } from 'a2a-ratelimit';
import { ManualClock } from 'a2a-ratelimit/testing';
import {
  createIdentityResolver,
  type IdentityResolver,
  type IgnoredUsageReport,
  identifyWith,
  parseIdentityConfig,
} from 'a2a-ratelimit-gateway';
import { afterEach, describe, expect, it } from 'vitest';
import {
  startSdkUpstream,
  startTestGateway,
  type TestGateway,
} from '../../../test/gateway.helpers.js';
import {
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from '../../../test/python-agent.helpers.js';
import { gatewayPolicies, parseGatewayConfig } from './gateway-config.js';

const FREE_KEY = 'free-key-0123456789abcdef';
const PRO_KEY = 'pro-key-0123456789abcdefgh';
const FREE_RATE = { limit: 10_000, windowSeconds: 60 };
const PRO_RATE = { limit: 100_000, windowSeconds: 60 };
const ESTIMATE = 2_000;
const REPORTED = 4_000;
const USAGE_PATH = 'metadata.usage.totalTokens';

const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage', 'SendStreamingMessage'],
  tiers: { free: FREE_RATE, pro: PRO_RATE },
  defaultTier: 'free',
  estimate: ESTIMATE,
};

/** ms a free caller waits for one token: 60 s / 10,000. */
const FREE_MS_PER_TOKEN = (FREE_RATE.windowSeconds * 1000) / FREE_RATE.limit;
/**
 * After three tasks of 4,000 the free budget is 12,000 − 10,000 = 2,000 in debt, and the next
 * admission needs its estimate (2,000) on hand: 4,000 tokens to refill.
 */
const FOURTH_DELAY_MS = (3 * REPORTED - FREE_RATE.limit + ESTIMATE) * FREE_MS_PER_TOKEN;

type Binding = 'JSONRPC' | 'HTTP+JSON';
const BINDINGS: readonly Binding[] = ['JSONRPC', 'HTTP+JSON'];

interface Upstream {
  readonly baseUrl: string;
  close(): Promise<void>;
}
type StartUpstream = (usageTokens: number) => Promise<Upstream>;

const python = pythonAgentSupport();
const UPSTREAMS: readonly (readonly [string, StartUpstream, boolean])[] = [
  ['sdk', (usageTokens) => startSdkUpstream({ usageTokens }), true],
  [
    'python',
    async (usageTokens) => {
      const agent = await startPythonAgent({ usageTokens, taskSeconds: 0 });
      return { baseUrl: agent.url, close: () => agent.stop() };
    },
    python.available || pythonAgentRequired,
  ],
];

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Run {
  readonly gw: TestGateway;
  readonly clock: ManualClock;
  readonly ignored: IgnoredUsageReport[];
}

async function setup(start: StartUpstream, usageTokens = REPORTED): Promise<Run> {
  const upstream = await start(usageTokens);
  closers.push(() => upstream.close());
  const resolver: IdentityResolver = await createIdentityResolver(
    parseIdentityConfig({
      apiKeys: [
        { key: FREE_KEY, caller: 'free-caller', tier: 'free' },
        { key: PRO_KEY, caller: 'pro-caller', tier: 'pro' },
      ],
    }),
  );
  closers.push(() => resolver.close());
  const clock = new ManualClock(1_000_000);
  const ignored: IgnoredUsageReport[] = [];
  const gw = await startTestGateway(upstream.baseUrl, {
    policies: [TOKENS],
    clock,
    gateway: {
      identify: identifyWith(() => resolver),
      usage: { path: USAGE_PATH, onIgnoredReport: (report) => ignored.push(report) },
    },
  });
  closers.push(() => gw.close());
  return { gw, clock, ignored };
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

let seq = 0;

/** One task (text `task`: completed at once), sent or streamed, on a binding, with a key. */
async function runTask(
  run: Run,
  binding: Binding,
  key: string,
  options: { readonly stream?: boolean; readonly fixture?: Record<string, unknown> } = {},
): Promise<Answer> {
  const messageId = `m-${++seq}`;
  const message = {
    messageId,
    role: 'ROLE_USER',
    parts: [{ text: 'task' }],
    ...(options.fixture === undefined ? {} : { metadata: { fixture: options.fixture } }),
  };
  const stream = options.stream === true;
  const headers = { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': key };
  const response =
    binding === 'JSONRPC'
      ? await fetch(`${run.gw.baseUrl}/a2a/jsonrpc`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: messageId,
            method: stream ? 'SendStreamingMessage' : 'SendMessage',
            params: { message },
          }),
        })
      : await fetch(`${run.gw.baseUrl}/a2a/rest/message:${stream ? 'stream' : 'send'}`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ message }),
        });
  // The whole answer (a stream to its end) is read before the next task starts.
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Whether an answer is a rate-limit refusal, and its RetryInfo delay in seconds. */
function refusalOf(binding: Binding, answer: Answer): { retryDelay: string } | undefined {
  if (binding === 'HTTP+JSON') {
    if (answer.status !== 429) return undefined;
    const body = JSON.parse(answer.text) as { error: { details: { retryDelay?: string }[] } };
    const retry = body.error.details.find((d) => d.retryDelay !== undefined);
    return { retryDelay: retry?.retryDelay ?? '' };
  }
  const body = JSON.parse(answer.text) as {
    error?: { data?: { retryDelay?: string }[] };
  };
  if (body.error === undefined) return undefined;
  const retry = body.error.data?.find((d) => d.retryDelay !== undefined);
  return { retryDelay: retry?.retryDelay ?? '' };
}

/** `r` of the answer's `"tokens"` RateLimit item: tokens left after its reservation. */
function tokensLeft(answer: Answer): number | undefined {
  const match = /"tokens";r=(\d+)/.exec(answer.headers.get('ratelimit') ?? '');
  return match === null ? undefined : Number(match[1]);
}

/** The answer completed a task (not refused, not an error). */
function expectCompleted(answer: Answer): void {
  expect(answer.status).toBe(200);
  expect(answer.text).not.toContain('"error"');
  expect(answer.text).toMatch(/TASK_STATE_COMPLETED/);
}

describe.each(UPSTREAMS)(
  'usage charged from the agent’s reports (upstream: %s)',
  (_name, start, up) => {
    it.skipIf(!up).each(BINDINGS)(
      '%s: 4,000 tokens a task → the free caller’s 4th task refused until 4,000 tokens refilled; the pro caller unaffected',
      async (binding) => {
        const run = await setup(start);
        // Tasks 1 and 2 report in their SendMessage result, task 3 in its stream's final event.
        const first = await runTask(run, binding, FREE_KEY);
        expectCompleted(first);
        // The budget's RateLimit item is in tokens, as in-process.
        expect(first.headers.get('ratelimit-policy')).toBe('"tokens";q=10000;qu="tokens";w=60');
        expect(tokensLeft(first)).toBe(10_000 - ESTIMATE);
        // The first task's report settled its reservation: 10,000 − 4,000 left, 2,000 reserved now.
        const second = await runTask(run, binding, FREE_KEY);
        expectCompleted(second);
        expect(tokensLeft(second)).toBe(6_000 - ESTIMATE);
        expectCompleted(await runTask(run, binding, FREE_KEY, { stream: true }));

        const fourth = await runTask(run, binding, FREE_KEY);
        const refusal = refusalOf(binding, fourth);
        expect(refusal).toBeDefined();
        expect(FOURTH_DELAY_MS).toBe(24_000);
        expect(refusal?.retryDelay).toBe(`${FOURTH_DELAY_MS / 1000}s`);
        if (binding === 'HTTP+JSON') {
          expect(fourth.headers.get('retry-after')).toBe(String(FOURTH_DELAY_MS / 1000));
        }

        // The pro caller's budget is its own: five tasks (20,000 tokens) and it still has 80,000.
        for (let i = 0; i < 5; i++) {
          const answer = await runTask(run, binding, PRO_KEY, { stream: i % 2 === 1 });
          expectCompleted(answer);
        }
        const pro = await runTask(run, binding, PRO_KEY);
        expectCompleted(pro);
        expect(tokensLeft(pro)).toBe(100_000 - 5 * REPORTED - ESTIMATE);

        // Exactly the delay: a millisecond short is still refused, then the 4th task runs.
        run.clock.advance(FOURTH_DELAY_MS - 1);
        expect(refusalOf(binding, await runTask(run, binding, FREE_KEY))).toBeDefined();
        run.clock.advance(1);
        expectCompleted(await runTask(run, binding, FREE_KEY));
        expect(run.ignored).toEqual([]);
      },
    );
  },
);

describe('reports that are missing or not numbers (upstream: sdk)', () => {
  it.each(BINDINGS)(
    '%s: a task that never reports keeps its estimate; a non-numeric report is ignored and counted',
    async (binding) => {
      const run = await setup((usageTokens) => startSdkUpstream({ usageTokens }));
      // No report at all: the task's final state carries no usage.
      const silent = await runTask(run, binding, FREE_KEY, { fixture: { usageTokens: null } });
      expectCompleted(silent);
      const strings = await runTask(run, binding, FREE_KEY, {
        fixture: { usageTokens: 'lots' },
        stream: true,
      });
      expectCompleted(strings);
      const negative = await runTask(run, binding, FREE_KEY, { fixture: { usageTokens: -5 } });
      expectCompleted(negative);
      expect(run.ignored.map((r) => r.value)).toEqual(['lots', -5]);
      // Three tasks, none charged anything but its 2,000 estimate; the 4th reserves its own.
      const next = await runTask(run, binding, FREE_KEY, { fixture: { usageTokens: 0 } });
      expectCompleted(next);
      expect(tokensLeft(next)).toBe(10_000 - 4 * ESTIMATE);
      // Its report of 0 settled its reservation: 2,000 given back.
      const after = await runTask(run, binding, FREE_KEY);
      expect(tokensLeft(after)).toBe(10_000 - 4 * ESTIMATE);
    },
  );
});

describe('usage: in the gateway config', () => {
  const base = { policies: [{ name: 'per-caller', kind: 'rate', limit: 60, windowSeconds: 60 }] };
  it('reads path and usage policies, added to policies:', () => {
    const config = parseGatewayConfig(
      { ...base, usage: { path: USAGE_PATH, policies: [{ ...TOKENS }] } },
      'gw.yaml',
    );
    expect(config.usage?.path).toBe(USAGE_PATH);
    expect(gatewayPolicies(config).map((p) => p.name)).toEqual(['per-caller', 'tokens']);
  });
  it('names the bad field', () => {
    const bad = (usage: unknown) => () => parseGatewayConfig({ ...base, usage }, 'gw.yaml');
    expect(bad({ policies: [TOKENS] })).toThrow('gw.yaml: usage.path: is required');
    expect(bad({ path: 'a..b', policies: [TOKENS] })).toThrow(
      'gw.yaml: usage.path: must be dotted',
    );
    const requests = { name: 'plain', kind: 'rate', limit: 5, windowSeconds: 60 };
    expect(bad({ path: USAGE_PATH, policies: [requests] })).toThrow(
      'gw.yaml: usage.policies[0]: must be a usage policy',
    );
    expect(bad({ path: USAGE_PATH, policies: [{ ...TOKENS, name: 'per-caller' }] })).toThrow(
      'gw.yaml: ',
    );
  });
});
