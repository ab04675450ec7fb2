/**
 * A real `@a2a-js/sdk` agent behind our admission on all three bindings, for the server tests:
 * `DefaultRequestHandler` + `InMemoryTaskStore` + the SDK's `jsonRpcHandler` / `restHandler` /
 * `grpcService`, with admission in front (`rateLimitedJsonRpcHandler` / `rateLimitedRestHandler`,
 * or `jsonRpcAdmission` / `restAdmission` mounted first) and `grpcAdmissionInterceptor` on the
 * grpc-js server, on 127.0.0.1 (port 0). The executor's
 * behaviour is chosen by the message text, and every execution is counted.
 */

import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH, type AgentCard, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import {
  type A2ARequestHandler,
  AgentEvent,
  type AgentExecutor,
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type User,
} from '@a2a-js/sdk/server';
import {
  agentCardHandler,
  type UserBuilder as ExpressUserBuilder,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { Policy } from 'a2a-ratelimit';
import { callWithinLimits, LimitedCallFailedError } from 'a2a-ratelimit/executor';
import {
  createLimiter,
  type Limiter,
  type LimiterOptions,
  withRateLimitExtension,
} from 'a2a-ratelimit/server';
import {
  guardContextBuilder,
  guardRequestHandler,
  jsonRpcAdmission,
  rateLimitedJsonRpcHandler,
  rateLimitedRestHandler,
  restAdmission,
} from 'a2a-ratelimit/server/express';
import {
  grpcAdmissionInterceptor,
  rateLimitedGrpcService,
  rateLimitedServiceDefinition,
} from 'a2a-ratelimit/server/grpc';
import { createRateLimitMetrics } from 'a2a-ratelimit/server/metrics';
import { exampleAgentCard, ManualClock, textMessage } from 'a2a-ratelimit/testing';
import express from 'express';

/** The SDK's in-memory task store, keeping the last saved copy of every task (across users). */
export class RecordingTaskStore extends InMemoryTaskStore {
  readonly saved = new Map<string, Task>();
  override async save(task: Task, context?: unknown): Promise<void> {
    this.saved.set(task.id, structuredClone(task));
    return super.save(task, context as never);
  }
}

/** The caller's identity as the agent's own auth sees it: `authorization: Bearer <name>`. */
function userFrom(value: unknown): User {
  const text = Array.isArray(value) ? value[0] : value;
  const match = typeof text === 'string' ? /^Bearer (.+)$/.exec(text) : null;
  const name = match?.[1] ?? '';
  return { isAuthenticated: name !== '', userName: name };
}

/** A user message. */
export function userMessage(messageId: string, text = 'task', taskId = ''): Message {
  return textMessage({ messageId, text, taskId });
}

function status(state: number, text?: string) {
  return {
    state,
    message:
      text === undefined
        ? undefined
        : textMessage({ messageId: `s-${Math.random()}`, text, role: 'agent' }),
    timestamp: new Date(0).toISOString(),
  };
}

/** Both ways of mounting admission: one middleware (the README's), or a layer before the SDK's router. */
export const MOUNTS = ['combined', 'separate'] as const;

export interface AgentOptions {
  readonly policies: readonly Policy[];
  readonly limiter?: Partial<LimiterOptions>;
  readonly mirrorHttpStatus?: boolean;
  readonly metrics?: boolean;
  /**
   * How admission is mounted: `combined` (default, as the README does: `rateLimitedJsonRpcHandler`
   * / `rateLimitedRestHandler`, one middleware each) or `separate` (`jsonRpcAdmission` /
   * `restAdmission` as layers of their own before the SDK's routers).
   */
  readonly mount?: (typeof MOUNTS)[number];
  /** An executor of the test's own, instead of the one below (then `executions` stays empty). */
  readonly executor?: AgentExecutor;
  /** The adapters' response write deadline, ms (`writeDeadlineMs`); default theirs. */
  readonly writeDeadlineMs?: number;
}

export interface TestAgent {
  readonly baseUrl: string;
  readonly jsonRpcUrl: string;
  readonly restUrl: string;
  readonly grpcUrl: string;
  readonly clock: ManualClock;
  readonly limiter: Limiter;
  readonly taskStore: RecordingTaskStore;
  readonly metrics: ReturnType<typeof createRateLimitMetrics> | undefined;
  /** Executions per messageId. */
  readonly executions: Map<string, number>;
  /**
   * Every operation the SDK request handler ran (below the backstop; `getAgentCard` aside), and
   * every request the limiter admitted, in order: "the handler ran ⇒ the limiter decided".
   */
  readonly handlerCalls: string[];
  readonly admissions: { readonly caller: string; readonly method: string }[];
  /** Total executions. */
  executionCount(): number;
  /** Completes every task held open by a `hold` message. */
  releaseHeld(): void;
  /** Number of tasks the store holds. */
  taskCount(): Promise<number>;
  client(
    binding: 'JSONRPC' | 'HTTP+JSON' | 'GRPC',
    fetchImpl?: typeof fetch,
  ): Promise<import('@a2a-js/sdk/client').Client>;
  close(): Promise<void>;
}

/** Starts the agent. Executor behaviour by message text: `task` (default: WORKING → COMPLETED), `hold` (WORKING until canceled or released), `fail`, `input` (INPUT_REQUIRED), `message` (a direct message reply), `limited` (an internal call limited until the helper gives up). */
export async function startAgent(options: AgentOptions): Promise<TestAgent> {
  const clock = new ManualClock(1_000_000);
  const executions = new Map<string, number>();
  const held = new Map<string, () => void>();
  const metrics = options.metrics
    ? createRateLimitMetrics({ callerLabel: { maxValues: 3 } })
    : undefined;

  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const card = exampleAgentCard({
    name: 'server-test',
    description: 'agent for server tests',
    extendedAgentCard: true,
  });

  const admissions: { caller: string; method: string }[] = [];
  const limiter = createLimiter({
    // A store given through `options.limiter` brings its own policies (both would throw).
    ...(options.limiter?.store === undefined ? { policies: options.policies } : {}),
    clock,
    domain: 'agents.example.com',
    eventLoopDelay: false,
    observer: {
      ...metrics?.observer,
      admitted(request, admission) {
        admissions.push({ caller: request.caller, method: request.method });
        metrics?.observer.admitted?.(request, admission);
      },
    },
    ...options.limiter,
  });

  const executor: AgentExecutor = {
    async execute(ctx, bus: ExecutionEventBus) {
      const messageId = ctx.userMessage.messageId;
      executions.set(messageId, (executions.get(messageId) ?? 0) + 1);
      const part = ctx.userMessage.parts[0] as unknown as
        | { content?: { value?: string } }
        | undefined;
      const text = part?.content?.value ?? 'task';
      const taskId = ctx.taskId;
      const contextId = ctx.contextId;
      if (text === 'message') {
        bus.publish(
          AgentEvent.message(
            textMessage({ messageId: `reply-${messageId}`, text: 'hi', role: 'agent', contextId }),
          ),
        );
        bus.finished();
        return;
      }
      const update = (state: number, note?: string) =>
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: status(state, note),
            metadata: {},
          } as never),
        );
      if (ctx.task === undefined) {
        bus.publish(
          AgentEvent.task({
            id: taskId,
            contextId,
            status: status(2),
            artifacts: [],
            history: [ctx.userMessage],
            metadata: {},
          } as unknown as Task),
        );
      } else {
        update(2);
      }
      if (text === 'hold') {
        await new Promise<void>((resolve) => held.set(taskId, resolve));
        update(3, 'released');
      } else if (text === 'fail') {
        update(4, 'failed on purpose');
      } else if (text === 'input') {
        update(6, 'need input');
      } else if (text === 'limited') {
        let nowMs = clock.nowMs();
        try {
          await callWithinLimits(
            async () => {
              throw Object.assign(new Error('provider 429'), { status: 429 });
            },
            {
              bus,
              taskId,
              contextId,
              label: 'model provider',
              maxAttempts: 3,
              clock: { nowMs: () => nowMs },
              sleep: async (ms) => {
                nowMs += ms;
              },
              random: () => 0.5,
              toRetrySource: () => ({
                kind: 'http',
                status: 429,
                headers: { 'retry-after': '2' },
                body: '',
              }),
            },
          );
        } catch (error) {
          if (!(error instanceof LimitedCallFailedError)) throw error;
        }
      } else {
        update(3, 'done');
      }
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      const resolve = held.get(taskId);
      held.delete(taskId);
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: '',
          status: status(5, 'canceled'),
          metadata: {},
        } as never),
      );
      resolve?.();
    },
  };

  const taskStore = new RecordingTaskStore();
  const handlerCalls: string[] = [];
  const expressUsers = async (req: express.Request) => userFrom(req.headers.authorization);
  const grpcUsers = async (call: { metadata: grpc.Metadata }) =>
    userFrom(call.metadata.get('authorization')[0]);
  const publicCard = () => withRateLimitExtension(card, limiter);
  const requestHandler = new DefaultRequestHandler(
    publicCard(),
    taskStore,
    options.executor ?? executor,
    limiter.trackTasks(new DefaultExecutionEventBusManager()),
    undefined,
    undefined,
    async (ctx) =>
      withRateLimitExtension(
        { ...card, description: `extended for ${ctx.user?.userName}` },
        limiter,
        { caller: ctx.user?.userName ?? '' },
      ),
  );
  const sdkHandler = recordingHandler(requestHandler, handlerCalls);
  // The interceptor is installed through the server's options; rebuild with it.
  const deadline =
    options.writeDeadlineMs === undefined ? {} : { writeDeadlineMs: options.writeDeadlineMs };
  const interceptor = grpcAdmissionInterceptor(limiter, {
    userBuilder: grpcUsers as never,
    requestHandler,
    ...deadline,
  });
  const g = new grpc.Server({ interceptors: [interceptor] });
  g.addService(
    rateLimitedServiceDefinition(A2AService),
    rateLimitedGrpcService({ requestHandler: sdkHandler, userBuilder: grpcUsers as never }),
  );
  const grpcPort = await new Promise<number>((resolve, reject) =>
    g.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
      error ? reject(error) : resolve(port),
    ),
  );
  const grpcUrl = `127.0.0.1:${grpcPort}`;
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
    { url: grpcUrl, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' },
  );
  Object.assign(requestHandler as unknown as { agentCard: AgentCard }, { agentCard: publicCard() });

  const userBuilder = expressUsers as unknown as typeof ExpressUserBuilder.noAuthentication;
  const mirror = {
    ...(options.mirrorHttpStatus === undefined
      ? {}
      : { mirrorHttpStatus: options.mirrorHttpStatus }),
    ...deadline,
  };
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  if (options.mount === 'separate') {
    const expressOptions = { userBuilder, requestHandler: sdkHandler, ...mirror };
    app.use('/a2a/jsonrpc', jsonRpcAdmission(limiter, expressOptions));
    // The SDK's routers with the backstop the combined handlers build in (docs: Configuration).
    const guarded = {
      requestHandler: guardRequestHandler(sdkHandler),
      contextBuilder: guardContextBuilder(),
      userBuilder,
    };
    app.use('/a2a/jsonrpc', jsonRpcHandler(guarded));
    app.use('/a2a/rest', restAdmission(limiter, expressOptions));
    app.use('/a2a/rest', restHandler(guarded));
  } else {
    const combined = { requestHandler: sdkHandler, userBuilder, admission: mirror };
    app.use('/a2a/jsonrpc', rateLimitedJsonRpcHandler(limiter, combined));
    app.use('/a2a/rest', rateLimitedRestHandler(limiter, combined));
  }
  if (metrics !== undefined) {
    app.get('/metrics', async (_req, res) => {
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    });
  }

  const clients: { close?: () => void }[] = [];
  return {
    baseUrl,
    jsonRpcUrl: `${baseUrl}/a2a/jsonrpc`,
    restUrl: `${baseUrl}/a2a/rest`,
    grpcUrl,
    clock,
    limiter,
    taskStore,
    metrics,
    executions,
    handlerCalls,
    admissions,
    executionCount: () => [...executions.values()].reduce((a, b) => a + b, 0),
    releaseHeld: () => {
      for (const resolve of held.values()) resolve();
      held.clear();
    },
    taskCount: async () => taskStore.saved.size,
    async client(binding, fetchImpl) {
      const { JsonRpcTransportFactory, RestTransportFactory } = await import('@a2a-js/sdk/client');
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [
            new JsonRpcTransportFactory(fetchImpl === undefined ? {} : { fetchImpl }),
            new RestTransportFactory(fetchImpl === undefined ? {} : { fetchImpl }),
            new GrpcTransportFactory({}),
          ],
          preferredTransports: [binding],
        }),
      );
      return factory.createFromAgentCard(publicCard() as AgentCard);
    },
    async close() {
      for (const c of clients) c.close?.();
      for (const resolve of held.values()) resolve();
      await limiter.close();
      await new Promise<void>((resolve) => g.tryShutdown(() => resolve()));
      g.forceShutdown();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `handler`, recording the name of every operation it runs but `getAgentCard` in `calls`. */
function recordingHandler(handler: A2ARequestHandler, calls: string[]): A2ARequestHandler {
  return new Proxy(handler, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function' || name === 'getAgentCard') return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** Request options carrying the caller's identity. */
export function as(caller: string, signal?: AbortSignal) {
  return {
    serviceParameters: { authorization: `Bearer ${caller}` },
    ...(signal === undefined ? {} : { signal }),
  };
}
