/**
 * The seed's worked example through the gateway on gRPC: the SDK's gRPC agent with no limiter of
 * ours (and the stdlib Python agent's gRPC server when python3-grpcio is here), the gateway in front of it limiting 60 SendMessage per minute per caller with a burst of
 * 10, and our client (`createRetryInterceptor` under the SDK's own gRPC client, which finds the
 * gateway from its card) sending 30 messages at once. Time is virtual on both sides; the driver
 * advances it only while no call is on the wire and something waits on a timer, so decisions are
 * exact.
 */

import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import * as grpc from '@grpc/grpc-js';
import { createRetryInterceptor } from 'a2a-ratelimit/client/grpc';
import { createVirtualTime, seededRandom, WORKED_EXAMPLE_POLICY } from 'a2a-ratelimit/simulation';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { startGrpcGateway, startSdkGrpcUpstream } from './gateway-grpc.helpers.js';
import {
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';

/** An upstream as this test counts it: SendMessage calls that reached it, runs per message. */
interface CountedUpstream {
  readonly baseUrl: string;
  sendCalls(): Promise<number>;
  runs(): Promise<number[]>;
  close(): Promise<void>;
}

const startSdk = async (): Promise<CountedUpstream> => {
  const upstream = await startSdkGrpcUpstream();
  return {
    baseUrl: upstream.baseUrl,
    sendCalls: async () => upstream.calls.filter((c) => c === 'SendMessage').length,
    runs: async () => [...upstream.executions.values()],
    close: upstream.close,
  };
};

const startPython = async (): Promise<CountedUpstream> => {
  const agent = await startPythonAgent({ grpc: true, answer: 'message' });
  return {
    baseUrl: agent.url,
    sendCalls: async () => (await agent.counts()).byMethod.SendMessage ?? 0,
    runs: async () => Object.values((await agent.counts()).runsByMessageId),
    close: () => agent.stop(),
  };
};

const UPSTREAMS: readonly (readonly [string, () => Promise<CountedUpstream>])[] = [
  ['sdk', startSdk],
  ...(pythonAgentSupport(true).available || pythonAgentRequired
    ? [['python', startPython] as const]
    : []),
];

const CALLS = 30;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe.each(UPSTREAMS)(
  'worked example through the gateway on gRPC (upstream: %s)',
  (_name, start) => {
    it('30 at once → 10 admitted, 20 on their first retry after 1…20 s, none abandoned, the upstream sees 30', async () => {
      const upstream = await start();
      closers.push(upstream.close);
      const vt = createVirtualTime({ startMs: 1_000_000 });
      const rejectionDelaysMs: number[] = [];
      const admittedAtMs = new Map<string, number>();
      const attempts = new Map<string, number>();
      const count = (messageId: string | undefined): void => {
        if (messageId !== undefined) attempts.set(messageId, (attempts.get(messageId) ?? 0) + 1);
      };
      const gw = await startGrpcGateway(upstream.baseUrl, {
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

      // Attempts on the wire (inside the retry interceptor: each attempt counts).
      let onWire = 0;
      const counting: grpc.Interceptor = (options, nextCall) =>
        new grpc.InterceptingCall(nextCall(options), {
          start(metadata, _listener, next) {
            onWire++;
            next(metadata, {
              onReceiveStatus(status, nextStatus) {
                onWire--;
                nextStatus(status);
              },
            });
          },
        });
      const retry = createRetryInterceptor({
        agent: gw.grpcTarget,
        clock: vt,
        sleep: vt.sleep,
        random: seededRandom(7),
      });
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [
            new GrpcTransportFactory({ grpcCallOptions: { interceptors: [retry, counting] } }),
          ],
          preferredTransports: ['GRPC'],
        }),
      );
      // Found from the gateway's card: its gRPC interface names the gateway's listener.
      const client = await factory.createFromUrl(gw.baseUrl);

      const startMs = vt.nowMs();
      let settled = 0;
      const all = Promise.all(
        Array.from({ length: CALLS }, (_, i) =>
          client
            .sendMessage({ message: textMessage({ messageId: `g-${i}`, text: 'hi' }) } as never)
            .finally(() => settled++),
        ),
      );
      while (settled < CALLS) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (onWire === 0 && gw.gateway.inFlight() === 0 && vt.pendingTimers > 0) {
          await vt.advance(100);
        }
      }
      const results = await all;
      expect(results).toHaveLength(CALLS);
      const firstTry = [...attempts.values()].filter((n) => n === 1).length;
      const secondTry = [...attempts.values()].filter((n) => n === 2).length;
      expect({ firstTry, secondTry, calls: attempts.size }).toEqual({
        firstTry: 10,
        secondTry: 20,
        calls: CALLS,
      });
      expect([...rejectionDelaysMs].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, i) => (i + 1) * 1000),
      );
      const admitted = [...admittedAtMs.values()].map((t) => t - startMs);
      expect(admitted.filter((t) => t === 0)).toHaveLength(10);
      expect(Math.max(...admitted)).toBeGreaterThanOrEqual(20_000);
      // The upstream saw each message exactly once: 30 SendMessage calls, 30 executions.
      expect(await upstream.sendCalls()).toBe(CALLS);
      expect(await upstream.runs()).toEqual(Array(CALLS).fill(1));
    });
  },
);
