/**
 * `createRetryInterceptor` under the SDK's own gRPC client (`GrpcTransportFactory` with
 * `grpcCallOptions.interceptors`), against a real grpc-js server running the SDK's `grpcService`,
 * wrapped so that a real MemoryStore refuses first with our gRPC encoding (RESOURCE_EXHAUSTED,
 * `grpc-status-details-bin` RetryInfo, `grpc-retry-pushback-ms`). Virtual time on both sides.
 */

import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { A2AService, grpcService, UserBuilder } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { RatePolicy } from 'a2a-ratelimit';
import { MemoryStore } from 'a2a-ratelimit';
import type { RetrySchedulerOptions } from 'a2a-ratelimit/client';
import { isRateLimitedError, isRetryBudgetExceededError, retryErrorOf } from 'a2a-ratelimit/client';
import { createRetryInterceptor } from 'a2a-ratelimit/client/grpc';
import { createVirtualTime } from 'a2a-ratelimit/simulation';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeGrpcRejection } from './rejection-wire.helpers.js';
import { agentCard, echoRequestHandler, userMessage } from './sdk-agent.helpers.js';

interface Arrival {
  atMs: number;
  rpc: string;
  messageId: string;
  refusedAfterMs?: number;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function setup(
  options: RetrySchedulerOptions = {},
  refuse: 'limiter' | 'bare-internal' = 'limiter',
) {
  const vt = createVirtualTime({ startMs: 5_000_000, autoAdvance: true });
  const policy: RatePolicy = {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage', 'SendStreamingMessage'],
    limit: 60,
    windowSeconds: 60,
    burst: 1,
  };
  const store = new MemoryStore({ policies: [policy], clock: vt });
  const arrivals: Arrival[] = [];
  const seenIds = new Set<string>();

  /** The gatekeeper: our encoding over the real store, or a bare INTERNAL on first sight. */
  const refusal = (
    rpc: 'SendMessage' | 'SendStreamingMessage',
    request: { message?: { messageId?: string } },
  ) => {
    const messageId = request.message?.messageId ?? '';
    const arrival: Arrival = { atMs: vt.nowMs(), rpc, messageId };
    arrivals.push(arrival);
    if (refuse === 'bare-internal') {
      const first = !seenIds.has(messageId);
      seenIds.add(messageId);
      return first
        ? { code: grpc.status.INTERNAL, details: 'Internal error', metadata: new grpc.Metadata() }
        : undefined;
    }
    const decision = store.decideSync({ caller: 'anonymous', method: rpc, messageId });
    if (decision.admitted) return undefined;
    const encoded = encodeGrpcRejection(decision.rejection, {
      domain: 'agents.example.com',
      limits: decision.limits,
    });
    const metadata = new grpc.Metadata();
    for (const [key, value] of Object.entries(encoded.trailers)) {
      metadata.set(key, typeof value === 'string' ? value : Buffer.from(value));
    }
    arrival.refusedAfterMs = Number(encoded.trailers['grpc-retry-pushback-ms']);
    return { code: encoded.code, details: encoded.message, metadata };
  };

  const card = agentCard([{ url: 'pending', protocolBinding: 'GRPC' }]);
  type Request = { message?: { messageId?: string } };
  // Loosely typed so the test can wrap two handlers; the SDK's own handlers do the real work.
  const impl = grpcService({
    requestHandler: echoRequestHandler(card),
    userBuilder: UserBuilder.noAuthentication,
  }) as unknown as grpc.UntypedServiceImplementation;
  const sendMessage = impl.sendMessage as grpc.handleUnaryCall<Request, unknown>;
  const unary: grpc.handleUnaryCall<Request, unknown> = (call, callback) => {
    const refused = refusal('SendMessage', call.request);
    if (refused) callback(refused);
    else sendMessage(call, callback);
  };
  impl.sendMessage = unary as grpc.UntypedHandleCall;
  const stream = impl.sendStreamingMessage as grpc.handleServerStreamingCall<Request, unknown>;
  const streaming: grpc.handleServerStreamingCall<Request, unknown> = (call) => {
    const refused = refusal('SendStreamingMessage', call.request);
    if (refused) call.emit('error', refused);
    else stream(call);
  };
  impl.sendStreamingMessage = streaming as grpc.UntypedHandleCall;

  const server = new grpc.Server();
  server.addService(A2AService, impl);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  closers.push(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
  const url = `127.0.0.1:${port}`;
  const interceptor = createRetryInterceptor({
    agent: url,
    clock: vt,
    sleep: vt.sleep,
    random: () => 0.25,
    ...options,
  });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new GrpcTransportFactory({ grpcCallOptions: { interceptors: [interceptor] } })],
      preferredTransports: ['GRPC'],
    }),
  );
  const client = await factory.createFromAgentCard(agentCard([{ url, protocolBinding: 'GRPC' }]));
  return { vt, arrivals, client };
}

describe('retry interceptor with the SDK gRPC client', () => {
  it('re-issues a unary call refused with RESOURCE_EXHAUSTED no earlier than RetryInfo says', async () => {
    const { arrivals, client } = await setup();
    const results = await Promise.all(
      ['g-1', 'g-2', 'g-3'].map((id) => client.sendMessage({ message: userMessage(id) } as never)),
    );
    expect(results).toHaveLength(3);
    const refused = arrivals.filter((a) => a.refusedAfterMs !== undefined);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    for (const r of refused) {
      const next = arrivals.find((a) => a.messageId === r.messageId && a.atMs > r.atMs);
      expect(next?.atMs).toBeGreaterThanOrEqual(r.atMs + (r.refusedAfterMs ?? 0));
    }
    expect(
      arrivals
        .filter((a) => a.refusedAfterMs === undefined)
        .map((a) => a.messageId)
        .sort(),
    ).toEqual(['g-1', 'g-2', 'g-3']);
  });

  it('re-issues a server stream refused before its first message', async () => {
    const { arrivals, client } = await setup();
    await client.sendMessage({ message: userMessage('warm-up') } as never);
    const events: unknown[] = [];
    for await (const event of client.sendMessageStream({ message: userMessage('s-1') } as never)) {
      events.push(event);
    }
    expect(events.length).toBeGreaterThanOrEqual(1);
    const s1 = arrivals.filter((a) => a.messageId === 's-1');
    expect(s1).toHaveLength(2);
    expect((s1[1]?.atMs ?? 0) - (s1[0]?.atMs ?? 0)).toBeGreaterThanOrEqual(
      s1[0]?.refusedAfterMs ?? Number.NaN,
    );
  });

  it('a hint above maxSingleWaitMs fails at once; the typed error rides on the SDK error', async () => {
    const { vt, arrivals, client } = await setup({ maxSingleWaitMs: 500 });
    await client.sendMessage({ message: userMessage('first') } as never);
    const startMs = vt.nowMs();
    const error = await client
      .sendMessage({ message: userMessage('second') } as never)
      .catch((e: unknown) => e);
    const typed = retryErrorOf(error);
    expect(isRetryBudgetExceededError(typed)).toBe(true);
    expect(typed?.hint.delayMs).toBe(1_000);
    expect(vt.nowMs()).toBe(startMs);
    expect(arrivals.filter((a) => a.messageId === 'second')).toHaveLength(1);
  });

  it('the guards recognise our errors through the SDK GrpcA2AErrorImpl; the budget error names the policy and option', async () => {
    const { client } = await setup({ maxSingleWaitMs: 500 });
    await client.sendMessage({ message: userMessage('first') } as never);
    const error = await client
      .sendMessage({ message: userMessage('second') } as never)
      .catch((e: unknown) => e);
    // What the caller catches is the SDK's error, not ours...
    expect((error as Error).constructor.name).toBe('GrpcA2AErrorImpl');
    expect(Object.hasOwn(error as object, 'isRetryBudgetExceededError')).toBe(false);
    // ...and the guard sees ours behind it, with the hint readable on what was caught.
    expect(isRetryBudgetExceededError(error)).toBe(true);
    if (!isRetryBudgetExceededError(error)) return;
    expect(error.hint.delayMs).toBe(1_000);
    expect(error.hint.policy).toBe('per-caller');
    expect(error.refusedBy).toBe('maxSingleWaitMs');
    expect(error.requiredWaitMs).toBe(1_000);
    expect(isRateLimitedError(error)).toBe(false);
    expect(retryErrorOf(error) !== undefined).toBe(true);
    const ours = retryErrorOf(error);
    expect(ours?.message).toContain('policy "per-caller"');
    expect(ours?.message).toContain('maxSingleWaitMs');
  });

  it('isRateLimitedError recognises a quota stop through the SDK gRPC error', async () => {
    const { client } = await setup({ maxHintedRetries: 0 });
    await client.sendMessage({ message: userMessage('first') } as never);
    const error = await client
      .sendMessage({ message: userMessage('second') } as never)
      .catch((e: unknown) => e);
    expect((error as Error).constructor.name).toBe('GrpcA2AErrorImpl');
    expect(isRateLimitedError(error)).toBe(true);
    if (!isRateLimitedError(error)) return;
    expect(error.hint.kind).toBe('quota');
    expect(error.hint.policy).toBe('per-caller');
    expect(error.attempts).toBe(1);
    expect(isRetryBudgetExceededError(error)).toBe(false);
  });

  it('a bare INTERNAL on SendMessage is not repeated unless the agent deduplicates', async () => {
    const plain = await setup({}, 'bare-internal');
    await expect(
      plain.client.sendMessage({ message: userMessage('i-1') } as never),
    ).rejects.toThrow();
    expect(plain.arrivals.filter((a) => a.messageId === 'i-1')).toHaveLength(1);

    const dedup = await setup({ agentDeduplicates: true }, 'bare-internal');
    await dedup.client.sendMessage({ message: userMessage('i-2') } as never);
    expect(dedup.arrivals.filter((a) => a.messageId === 'i-2')).toHaveLength(2);
  });
});
