/**
 * A real `@a2a-js/sdk` agent with push notifications on all three bindings (the SDK's
 * `jsonRpcHandler`, `restHandler`, `grpcService` on 127.0.0.1), its push configs kept in
 * `validatingPushNotificationStore` and delivered by `RateLimitedPushSender` through the
 * SSRF-safe transport — with the test's resolver (host names → addresses) and a connector that
 * records every dial and sends it to a loopback stand-in instead, so no test traffic leaves
 * loopback. The executor completes every task in two steps and counts executions.
 */

import { type AddressInfo, connect } from 'node:net';
import { AGENT_CARD_PATH, type AgentCard, type Task } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import {
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
  UserBuilder,
} from '@a2a-js/sdk/server/express';
import { A2AService, UserBuilder as GrpcUserBuilder, grpcService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { RateLimitedPushSenderOptions, WebhookTransportOptions } from 'a2a-ratelimit/push';
import {
  createWebhookPolicy,
  createWebhookTransport,
  RateLimitedPushSender,
  validatingPushNotificationStore,
  type WebhookPolicyOptions,
} from 'a2a-ratelimit/push';
import { exampleAgentCard } from 'a2a-ratelimit/testing';
import express from 'express';

/** A dropped notification, as the sender's `onDrop` reports it. */
type PushDrop = Parameters<NonNullable<RateLimitedPushSenderOptions['onDrop']>>[0];
/** One address a name resolves to, as the transport's `resolve` option gives them. */
type ResolvedAddress = Awaited<ReturnType<NonNullable<WebhookTransportOptions['resolve']>>>[number];
/** A webhook the policy refused, as the store's `onRefused` reports it. */
type WebhookRefusal = Parameters<
  NonNullable<Parameters<typeof validatingPushNotificationStore>[1]>['onRefused'] & {}
>[0];

/** Where the transport dials (the argument of its `connect` option). */
type WebhookConnectTarget = Parameters<NonNullable<WebhookTransportOptions['connect']>>[0];

/** The three bindings, as the SDK client names them. */
export const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const;

export interface PushAgent {
  readonly executions: () => number;
  /** Every connection the sender opened (never dialled: sent to `standInPort`). */
  readonly dialled: WebhookConnectTarget[];
  /** Every name the store or the sender resolved. */
  readonly resolved: string[];
  /** Refusals at registration. */
  readonly refusedAtCreation: { refusal: WebhookRefusal; url: string }[];
  readonly drops: PushDrop[];
  readonly sender: RateLimitedPushSender;
  client(binding: (typeof BINDINGS)[number]): Promise<Client>;
  close(): Promise<void>;
}

/**
 * Starts the agent. `names` is the test's DNS (a function entry answers each lookup anew);
 * `standInPort` is the loopback server every allowed connection is sent to.
 */
export async function startPushAgent(options: {
  readonly standInPort: number;
  readonly names?: Record<string, readonly ResolvedAddress[] | (() => readonly ResolvedAddress[])>;
  readonly policy?: WebhookPolicyOptions;
}): Promise<PushAgent> {
  const dialled: WebhookConnectTarget[] = [];
  const resolved: string[] = [];
  const refusedAtCreation: { refusal: WebhookRefusal; url: string }[] = [];
  const drops: PushDrop[] = [];
  let executions = 0;
  const resolve = async (hostname: string) => {
    resolved.push(hostname);
    const entry = options.names?.[hostname];
    if (entry === undefined) {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    }
    return typeof entry === 'function' ? entry() : entry;
  };
  const policy = createWebhookPolicy(options.policy ?? {});
  const transport = createWebhookTransport({
    policy,
    resolve,
    connect: (target) => {
      dialled.push(target);
      return connect({ host: '127.0.0.1', port: options.standInPort });
    },
  });
  const pushStore = validatingPushNotificationStore(new InMemoryPushNotificationStore(), {
    policy,
    resolve,
    onRefused: (refusal, url) => refusedAtCreation.push({ refusal, url }),
  });
  const sender = new RateLimitedPushSender(pushStore, {
    policy,
    transport,
    logger: false,
    onDrop: (d) => drops.push(d),
  });

  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      executions++;
      const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
      const status = (state: number) => ({
        state,
        message: undefined,
        timestamp: new Date().toISOString(),
      });
      bus.publish(
        AgentEvent.task({
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: status(1),
          artifacts: [],
          history: [ctx.userMessage],
          metadata: undefined,
        } as unknown as Task),
      );
      bus.publish(
        AgentEvent.statusUpdate({ ...ids, status: status(2), metadata: undefined } as never),
      );
      bus.publish(
        AgentEvent.statusUpdate({ ...ids, status: status(3), metadata: undefined } as never),
      );
      bus.finished();
    },
    async cancelTask() {},
  };

  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((done) => server.once('listening', () => done()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = exampleAgentCard({ name: 'push-agent' });
  (card.capabilities as { pushNotifications: boolean }).pushNotifications = true;
  const requestHandler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor,
    undefined,
    pushStore,
    sender,
  );
  const userBuilder = UserBuilder.noAuthentication;
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder }));
  const g = new grpc.Server();
  g.addService(
    A2AService,
    grpcService({ requestHandler, userBuilder: GrpcUserBuilder.noAuthentication }),
  );
  const grpcPort = await new Promise<number>((done, fail) =>
    g.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
      error ? fail(error) : done(port),
    ),
  );
  card.supportedInterfaces.push(
    {
      url: `${baseUrl}/a2a/jsonrpc`,
      protocolBinding: 'JSONRPC',
      tenant: '',
      protocolVersion: '1.0',
    },
    {
      url: `${baseUrl}/a2a/rest`,
      protocolBinding: 'HTTP+JSON',
      tenant: '',
      protocolVersion: '1.0',
    },
    { url: `127.0.0.1:${grpcPort}`, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' },
  );

  return {
    executions: () => executions,
    dialled,
    resolved,
    refusedAtCreation,
    drops,
    sender,
    client: (binding) =>
      new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [
            new JsonRpcTransportFactory(),
            new RestTransportFactory(),
            new GrpcTransportFactory({}),
          ],
          preferredTransports: [binding],
        }),
      ).createFromAgentCard(card as AgentCard),
    async close() {
      await sender.close();
      transport.close();
      await new Promise<void>((done) => g.tryShutdown(() => done()));
      g.forceShutdown();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
