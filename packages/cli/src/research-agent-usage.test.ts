/**
 * Issue 14's budget over the real SDK server, on all three bindings, with `serve`'s research
 * agent (which reports `DEMO_TOKENS_PER_MESSAGE` = 4,000 tokens per task through
 * `limiter.usageOf(task)`): 10,000 tokens per minute per caller, so the 3rd task is admitted (the
 * budget is still positive), the 4th is refused with the exact refill delay (2,001 tokens at
 * 6 ms = 12.006 s, on the wire as every delay: RetryInfo and Retry-After 13 s, rounded up), still
 * refused 1 ms before that instant and admitted at it.
 */

import type { AgentCard } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import type { Policy } from 'a2a-ratelimit';
import { ManualClock, textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type DecodedRejection,
  decodeGrpcRejection,
  decodeJsonRpcRejection,
  decodeRestRejection,
} from '../../../test/rejection-wire.helpers.js';
import {
  DEMO_TOKENS_PER_MESSAGE,
  type ResearchAgent,
  startResearchAgent,
} from './research-agent.js';

const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage', 'SendStreamingMessage'],
  limit: 10_000,
  windowSeconds: 60,
};

/** A2A `TASK_STATE_COMPLETED`. */
const TASK_COMPLETED = 3;

let agent: ResearchAgent | undefined;
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

async function clientOf(card: AgentCard, binding: string, fetchImpl: typeof fetch) {
  const { JsonRpcTransportFactory, RestTransportFactory } = await import('@a2a-js/sdk/client');
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        new JsonRpcTransportFactory({ fetchImpl }),
        new RestTransportFactory({ fetchImpl }),
        new GrpcTransportFactory({}),
      ],
      preferredTransports: [binding],
    }),
  );
  return factory.createFromAgentCard(card);
}

function grpcRejection(error: unknown): DecodedRejection | undefined {
  const e = error as {
    cause?: { code: number; details: string; metadata: { getMap(): Record<string, unknown> } };
  };
  return e.cause?.metadata === undefined
    ? undefined
    : decodeGrpcRejection(e.cause.code, e.cause.details, e.cause.metadata.getMap() as never);
}

describe('a token budget over the SDK server, reported by the demo agent', () => {
  it.each(['JSONRPC', 'HTTP+JSON', 'GRPC'])(
    '%s: 4,000 tokens a task, 10,000 a minute: 3 admitted, the 4th refused for 12.006 s, then one more',
    async (binding) => {
      expect(DEMO_TOKENS_PER_MESSAGE).toBe(4_000);
      const clock = new ManualClock(1_000_000);
      agent = await startResearchAgent({ policies: [TOKENS], clock, port: 0, grpcPort: 0 });
      const seen: Seen[] = [];
      const client = await clientOf(agent.card, binding, recordingFetch(seen));
      const auth = { serviceParameters: { authorization: `Bearer alice-${binding}` } };
      const send = (i: number) =>
        client.sendMessage(
          {
            message: textMessage({ messageId: `m${i}-${binding}`, text: 'rate limits' }),
            tenant: '',
          } as never,
          auth,
        );

      const remaining: (string | null)[] = [];
      for (let i = 1; i <= 3; i++) {
        const task = (await send(i)) as { status?: { state?: unknown } };
        expect(task.status?.state, `task ${i}`).toBe(TASK_COMPLETED);
        if (binding !== 'GRPC') remaining.push(seen.at(-1)?.headers.get('ratelimit') ?? null);
      }
      if (binding !== 'GRPC') {
        // r in tokens, each answer taken before its own task reported.
        expect(remaining).toEqual(['"tokens";r=0;t=1', '"tokens";r=0;t=25', '"tokens";r=0;t=49']);
        expect(seen.at(-1)?.headers.get('ratelimit-policy')).toBe(
          '"tokens";q=10000;qu="tokens";w=60',
        );
      }

      const refused = await send(4).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused, 'the 4th task').toBeDefined();
      let decoded: DecodedRejection | undefined;
      if (binding === 'GRPC') decoded = grpcRejection(refused);
      else {
        const last = seen.at(-1) as Seen;
        expect(last.headers.get('retry-after')).toBe('13');
        decoded =
          binding === 'JSONRPC'
            ? decodeJsonRpcRejection(last.status, last.headers, last.body)
            : decodeRestRejection(last.status, last.headers, last.body);
      }
      expect(decoded).toMatchObject({
        policy: 'tokens',
        delaySeconds: 13, // whole seconds on the wire, rounded up
        quotaValue: 10_000,
      });

      clock.advance(12_005);
      await expect(send(5)).rejects.toBeDefined();
      clock.advance(1);
      const fifth = (await send(6)) as { status?: { state?: unknown } };
      expect(fifth.status?.state).toBe(TASK_COMPLETED);
    },
  );
});

describe('the README budget against 30 tasks sent at once (JSON-RPC, the real SDK server)', () => {
  it('admits no more tokens of work than the budget plus one task', async () => {
    const clock = new ManualClock(1_000_000);
    // Every task works until all 30 answers are in: they are all in flight at once.
    let finish: () => void = () => {};
    const working = new Promise<void>((resolve) => {
      finish = resolve;
    });
    agent = await startResearchAgent({
      policies: [TOKENS],
      clock,
      port: 0,
      grpcPort: 0,
      task: { durationMs: 1, sleep: () => working },
    });
    const url = agent.jsonRpcUrl;
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'a2a-version': '1.0',
            authorization: 'Bearer alice-burst',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: i,
            method: 'SendMessage',
            params: {
              message: { messageId: `burst-${i}`, role: 'ROLE_USER', parts: [{ text: 'x' }] },
              configuration: { returnImmediately: true },
            },
          }),
        }).then(async (res) => (await res.json()) as { result?: unknown; error?: unknown }),
      ),
    );
    expect(agent.tasks.running).toBe(agent.tasks.peak); // none finished yet
    const admitted = answers.filter((a) => a.result !== undefined).length;
    expect(agent.tasks.peak).toBe(admitted);
    finish();
    await vi.waitFor(() => expect(agent?.tasks.running).toBe(0));
    const refused = answers.filter((a) => a.error !== undefined).length;
    expect(admitted + refused).toBe(30);
    expect(admitted).toBeGreaterThan(0);
    // Every admitted task reported DEMO_TOKENS_PER_MESSAGE: the work admitted stays within the
    // budget (10,000) plus one task (4,000) — without a reservation all 30 ran (120,000).
    expect(admitted * DEMO_TOKENS_PER_MESSAGE).toBeLessThanOrEqual(
      10_000 + DEMO_TOKENS_PER_MESSAGE,
    );
  });
});
