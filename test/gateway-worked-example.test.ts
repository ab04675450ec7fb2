/**
 * The seed's worked example through the gateway, on JSON-RPC and REST: an upstream SDK agent with
 * no limiter of ours, the gateway in front of it limiting 60 SendMessage per minute per caller
 * with a burst of 10, and our client (`createRetryingFetch` under the SDK's own client) sending 30
 * messages at once. Time is virtual on both sides (the gateway's limiter and the client's waits);
 * the driver advances it only while every call is waiting, so decisions are exact. The upstream is
 * a parameter (another language's agent runs the same checks).
 */

import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { createRetryingFetch } from 'a2a-ratelimit/client';
import {
  createVirtualTime,
  seededRandom,
  type VirtualClock,
  WORKED_EXAMPLE_POLICY,
} from 'a2a-ratelimit/simulation';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  GATEWAY_UPSTREAMS,
  type GatewayUpstream,
  type StartUpstream,
  startTestGateway,
  type TestGateway,
} from './gateway.helpers.js';

const UPSTREAMS = GATEWAY_UPSTREAMS;
const BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const;
const CALLS = 30;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Run {
  readonly upstream: GatewayUpstream;
  readonly gw: TestGateway;
  readonly vt: VirtualClock;
  readonly rejectionDelaysMs: number[];
  readonly admittedAtMs: Map<string, number>;
  readonly attempts: Map<string, number>;
}

async function setup(start: StartUpstream): Promise<Run> {
  const upstream = await start();
  closers.push(upstream.close);
  const vt = createVirtualTime({ startMs: 1_000_000 });
  const rejectionDelaysMs: number[] = [];
  const admittedAtMs = new Map<string, number>();
  const attempts = new Map<string, number>();
  const count = (messageId: string | undefined): void => {
    if (messageId !== undefined) attempts.set(messageId, (attempts.get(messageId) ?? 0) + 1);
  };
  const gw = await startTestGateway(upstream.baseUrl, {
    policies: [WORKED_EXAMPLE_POLICY],
    clock: vt,
    limiter: {
      observer: {
        admitted(request) {
          count(request.messageId);
          if (request.messageId !== undefined) admittedAtMs.set(request.messageId, vt.nowMs());
        },
        rejected(request, rejection) {
          count(request.messageId);
          rejectionDelaysMs.push(rejection.retryAfterMs);
        },
      },
    },
  });
  closers.push(gw.close);
  return { upstream, gw, vt, rejectionDelaysMs, admittedAtMs, attempts };
}

/** What the driver watches: sends on the wire, and the client's waits that ended. */
interface Activity {
  busy(): number;
  wakes(): number;
}

/** Our client over `binding`, on the run's virtual time, and its {@link Activity}. */
async function clientOf(
  run: Run,
  binding: (typeof BINDINGS)[number],
  planFromCard: boolean,
): Promise<{ client: Client } & Activity> {
  let onWire = 0;
  let woke = 0;
  const sleep = (ms: number, signal?: AbortSignal) =>
    run.vt.sleep(ms, signal).then(() => {
      woke++;
    });
  const counted: typeof fetch = async (input, init) => {
    onWire++;
    try {
      return await fetch(input, init);
    } finally {
      onWire--;
    }
  };
  const fetchImpl = createRetryingFetch({
    fetch: counted,
    clock: run.vt,
    sleep,
    random: seededRandom(7),
    planFromCard,
  });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        new JsonRpcTransportFactory({ fetchImpl }),
        new RestTransportFactory({ fetchImpl }),
      ],
      preferredTransports: [binding],
      // The card goes through our fetch too, which learns the limits it publishes.
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  const client = await factory.createFromUrl(run.gw.baseUrl);
  return { client, busy: () => onWire, wakes: () => woke };
}

/**
 * Runs `calls` to completion, advancing virtual time (100 ms at a time) only while nothing is on
 * the wire and something waits on a timer. Steps in which no timer fired follow each other at
 * once (nothing could have started); after one that fired, real time passes so that what it
 * started reaches the wire before time moves on.
 */
async function drive<T>(run: Run, activity: Activity, calls: Promise<T>[]): Promise<T[]> {
  let settled = 0;
  const all = Promise.all(calls.map((c) => c.finally(() => settled++)));
  const idle = () =>
    settled < calls.length &&
    activity.busy() === 0 &&
    run.gw.gateway.inFlight() === 0 &&
    run.vt.pendingTimers > 0;
  while (settled < calls.length) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    while (idle()) {
      const pending = run.vt.pendingTimers;
      const wakes = activity.wakes();
      await run.vt.advance(100);
      // A timer fired (the count changed, or a wait of the client's ended): let what it started
      // reach the wire before time moves on.
      if (run.vt.pendingTimers !== pending || activity.wakes() !== wakes) break;
    }
  }
  return all;
}

describe.each(UPSTREAMS)('worked example through the gateway (upstream: %s)', (_name, start) => {
  it.each(BINDINGS)(
    '%s: 30 at once → 10 admitted, 20 on their first retry after 1…20 s, none abandoned, the upstream sees 30',
    async (binding) => {
      const run = await setup(start);
      const { client, ...activity } = await clientOf(run, binding, false);
      const startMs = run.vt.nowMs();
      const results = await drive(
        run,
        activity,
        Array.from({ length: CALLS }, (_, i) =>
          client.sendMessage({
            message: textMessage({ messageId: `m-${i}`, text: 'hi' }),
          } as never),
        ),
      );
      expect(results).toHaveLength(CALLS);
      const firstTry = [...run.attempts.values()].filter((n) => n === 1).length;
      const secondTry = [...run.attempts.values()].filter((n) => n === 2).length;
      expect({ firstTry, secondTry, calls: run.attempts.size }).toEqual({
        firstTry: 10,
        secondTry: 20,
        calls: CALLS,
      });
      expect([...run.rejectionDelaysMs].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, i) => (i + 1) * 1000),
      );
      const admitted = [...run.admittedAtMs.values()].map((t) => t - startMs);
      expect(admitted.filter((t) => t === 0)).toHaveLength(10);
      expect(Math.max(...admitted)).toBeGreaterThanOrEqual(20_000);
      // The upstream saw each message exactly once: 30 requests, 30 executions.
      const seen = await run.upstream.seen();
      expect(seen.requests).toBe(CALLS);
      expect(seen.recent.every((r) => r.startsWith('POST'))).toBe(true);
      expect(Object.values(seen.runs)).toEqual(Array(CALLS).fill(1));
    },
  );

  it.each(BINDINGS)(
    '%s: the planned client reads the limits on the gateway’s card: 30 requests, 0 rejections',
    async (binding) => {
      const run = await setup(start);
      const { client, ...activity } = await clientOf(run, binding, true);
      const results = await drive(
        run,
        activity,
        Array.from({ length: CALLS }, (_, i) =>
          client.sendMessage({
            message: textMessage({ messageId: `p-${i}`, text: 'hi' }),
          } as never),
        ),
      );
      expect(results).toHaveLength(CALLS);
      expect(run.rejectionDelaysMs).toEqual([]);
      const seen = await run.upstream.seen();
      expect(seen.requests).toBe(CALLS);
      expect(Object.values(seen.runs)).toEqual(Array(CALLS).fill(1));
    },
  );
});
