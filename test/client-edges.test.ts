/**
 * The client at the edges of what an agent may send: a RetryInfo longer than protobuf's Duration
 * range (`"999999999999s"`, int64-max seconds over gRPC) is a hint too long for any budget — it
 * fails at once with `RetryBudgetExceededError`, like `"99999999999s"`, and never falls back to
 * backoff — and an error body is read with a size cap (a huge or endless body on loopback neither
 * hangs the client nor is buffered whole), with a time cap for a stalled one (`src/client/read-body-prefix.test.ts`). Real SDK agent and
 * clients, real grpc-js, real HTTP on 127.0.0.1.
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { A2AService, grpcService, UserBuilder } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { encodeStatus } from 'a2a-ratelimit';
import {
  createRetryingFetch,
  isRateLimitedError,
  isRetryBudgetExceededError,
  retryErrorOf,
} from 'a2a-ratelimit/client';
import { createRetryInterceptor } from 'a2a-ratelimit/client/grpc';
import { createVirtualTime } from 'a2a-ratelimit/simulation';
import { afterEach, describe, expect, it } from 'vitest';
import {
  agentCard,
  echoRequestHandler,
  type Gatekeeper,
  startSdkAgent,
  userMessage,
} from './sdk-agent.helpers.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** Longest protobuf Duration, ms: what a longer RetryInfo reads as. */
const MAX_DURATION_MS = 315_576_000_000_000;

const errorInfo = {
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
  reason: 'RATE_LIMIT_EXCEEDED',
  domain: 'agents.example.com',
  metadata: { policy: 'per-caller' },
};

/** Refuses every call, in the binding's shape, with only a RetryInfo of `retryDelay`. */
function tooLong(retryDelay: string): Gatekeeper {
  return (seen, _index, body) => {
    const details = [
      errorInfo,
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay },
    ];
    if (seen.binding === 'rest') {
      return {
        status: 429,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'slow down', details },
        }),
      };
    }
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: (body as { id?: number }).id ?? null,
        error: { code: -32603, message: 'slow down', data: details },
      }),
    };
  };
}

describe.each(['JSONRPC', 'HTTP+JSON'] as const)(
  'a RetryInfo past Duration range, SDK %s client',
  (binding) => {
    it.each(['999999999999s', '99999999999999999999s', '99999999999s'])(
      '%s fails at once with RetryBudgetExceededError, no backoff',
      async (retryDelay) => {
        const vt = createVirtualTime({ startMs: 1_000_000, autoAdvance: true });
        const agent = await startSdkAgent({ gatekeeper: tooLong(retryDelay), nowMs: vt.nowMs });
        closers.push(agent.close);
        const fetchImpl = createRetryingFetch({ clock: vt, sleep: vt.sleep, random: () => 0.25 });
        const client = await new ClientFactory(
          ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
            transports: [
              new JsonRpcTransportFactory({ fetchImpl }),
              new RestTransportFactory({ fetchImpl }),
            ],
            preferredTransports: [binding],
          }),
        ).createFromUrl(agent.baseUrl);
        const startMs = vt.nowMs();
        const error = await client
          .sendMessage({ message: userMessage('m-1') } as never)
          .catch((e: unknown) => e);
        expect(isRetryBudgetExceededError(error)).toBe(true);
        const expectedMs = retryDelay === '99999999999s' ? 99_999_999_999_000 : MAX_DURATION_MS;
        expect(isRetryBudgetExceededError(error) && error.hint.delayMs).toBe(expectedMs);
        expect(agent.arrivals.filter((a) => a.messageId === 'm-1')).toHaveLength(1);
        expect(vt.nowMs()).toBe(startMs);
      },
    );
  },
);

describe('a RetryInfo of int64-max seconds over gRPC', () => {
  it('fails at once with RetryBudgetExceededError, no backoff', async () => {
    const vt = createVirtualTime({ startMs: 5_000_000, autoAdvance: true });
    const card = agentCard([{ url: 'pending', protocolBinding: 'GRPC' }]);
    const impl = grpcService({
      requestHandler: echoRequestHandler(card),
      userBuilder: UserBuilder.noAuthentication,
    }) as unknown as grpc.UntypedServiceImplementation;
    let arrivals = 0;
    const details = encodeStatus({
      code: grpc.status.RESOURCE_EXHAUSTED,
      message: 'slow down',
      details: [
        {
          type: 'ErrorInfo',
          message: {
            reason: errorInfo.reason,
            domain: errorInfo.domain,
            metadata: errorInfo.metadata,
          },
        },
        { type: 'RetryInfo', message: { retryDelay: { seconds: 2n ** 63n - 1n, nanos: 0 } } },
      ],
    });
    impl.sendMessage = ((_call, callback) => {
      arrivals++;
      const metadata = new grpc.Metadata();
      metadata.set('grpc-status-details-bin', Buffer.from(details));
      callback({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'slow down', metadata });
    }) as grpc.handleUnaryCall<unknown, unknown> as grpc.UntypedHandleCall;
    const server = new grpc.Server();
    server.addService(A2AService, impl);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    closers.push(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
    const url = `127.0.0.1:${port}`;
    const interceptor = createRetryInterceptor({ agent: url, clock: vt, sleep: vt.sleep });
    const client = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [
          new GrpcTransportFactory({ grpcCallOptions: { interceptors: [interceptor] } }),
        ],
        preferredTransports: ['GRPC'],
      }),
    ).createFromAgentCard(agentCard([{ url, protocolBinding: 'GRPC' }]));
    const startMs = vt.nowMs();
    const error = await client
      .sendMessage({ message: userMessage('g-1') } as never)
      .catch((e: unknown) => e);
    const typed = retryErrorOf(error);
    expect(isRetryBudgetExceededError(typed)).toBe(true);
    expect(typed?.hint.delayMs).toBe(MAX_DURATION_MS);
    expect(arrivals).toBe(1);
    expect(vt.nowMs()).toBe(startMs);
  });
});

/** A loopback server: `handle` per request; every connection is closed at the end of the test. */
async function listen(handle: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A fetch that counts the body bytes the client actually pulls off the network, per response. */
function countingFetch(pulled: number[]): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init);
    if (res.body === null) return res;
    const index = pulled.push(0) - 1;
    const counted = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          pulled[index] = (pulled[index] ?? 0) + chunk.length;
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: res.status, headers: res.headers });
  }) as typeof fetch;
}

const SEND_MESSAGE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'SendMessage',
  params: { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
});

describe('error bodies are read with a size cap', () => {
  it('a 429 with an endless body: the client reads at most 64 KiB of each, retries as told, and ends', async () => {
    const LIMIT = 32 * 1024 * 1024; // "endless": far more than any client should read
    const offered: number[] = [];
    const base = await listen((_req, res) => {
      const index = offered.push(0) - 1;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.write('{"error":{"code":429,"message":"');
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while ((offered[index] ?? 0) < LIMIT) {
          offered[index] = (offered[index] ?? 0) + chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end('"}}');
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    });
    const vt = createVirtualTime({ startMs: 1_000_000, autoAdvance: true });
    const pulled: number[] = [];
    const fetchImpl = createRetryingFetch({
      fetch: countingFetch(pulled),
      clock: vt,
      sleep: vt.sleep,
      maxHintedRetries: 2,
    });
    const error = await fetchImpl(`${base}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: SEND_MESSAGE,
    }).catch((e: unknown) => e);
    expect(isRateLimitedError(error)).toBe(true);
    expect(isRateLimitedError(error) && error.hint.delayMs).toBe(1_000);
    expect(pulled).toHaveLength(3); // three attempts, one second apart
    for (const bytes of pulled) {
      expect(bytes).toBeGreaterThanOrEqual(64 * 1024);
      expect(bytes).toBeLessThan(1024 * 1024);
    }
    // The server could not push the whole body: the client stopped reading it.
    for (const bytes of offered) expect(bytes).toBeLessThan(LIMIT);
  });
});
