/**
 * The gRPC interceptor when something after the caller's identity throws (here a `skill`
 * function, after an asynchronous `identify`): the call fails with INTERNAL naming the error, the
 * executor never runs, and nothing is left as an unhandled rejection.
 */

import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { A2AService, grpcService, UserBuilder } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { createLimiter } from 'a2a-ratelimit/server';
import { grpcAdmissionInterceptor } from 'a2a-ratelimit/server/grpc';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { countingEchoExecutor } from './echo-executor.helpers.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe('gRPC interceptor errors', () => {
  it('an error after an asynchronous identity fails the call with INTERNAL; nothing ran', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 10, windowSeconds: 60 },
      ],
      domain: 'agents.example.com',
      dedup: false,
      eventLoopDelay: false,
    });
    const { executor: echo, executions } = countingEchoExecutor();
    const server = new grpc.Server({
      interceptors: [
        grpcAdmissionInterceptor(limiter, {
          identify: async () => 'caller-1',
          skill: () => {
            throw new Error('skill lookup failed');
          },
        }),
      ],
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, p) =>
        error ? reject(error) : resolve(p),
      ),
    );
    const card = exampleAgentCard({
      name: 'grpc-errors',
      interfaces: [{ url: `127.0.0.1:${port}`, protocolBinding: 'GRPC' }],
    });
    const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
    server.addService(
      A2AService,
      grpcService({ requestHandler, userBuilder: UserBuilder.noAuthentication }),
    );
    close = async () => {
      server.forceShutdown();
      await limiter.close();
    };
    const client = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new GrpcTransportFactory({})],
        preferredTransports: ['GRPC'],
      }),
    ).createFromAgentCard(card);
    const sent = client.sendMessage({
      tenant: '',
      message: textMessage({ messageId: 'm-1', text: 'hi' }),
    } as never);
    const error = await sent.then(
      () => undefined,
      (e: unknown) => e as { status?: unknown; message?: string },
    );
    expect(error?.status).toBe(grpc.status.INTERNAL);
    expect(error?.message).toMatch(/skill lookup failed/);
    expect(executions()).toBe(0);
  });
});
