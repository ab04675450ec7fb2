/**
 * Gateway tests' parts: an upstream A2A agent with NO limiter of ours (the SDK's
 * `DefaultRequestHandler` behind its own JSON-RPC and REST routers, on 127.0.0.1) that counts every
 * request it sees and every execution, and the gateway engine in front of it on 127.0.0.1 (port 0).
 * The upstream is a parameter of every test (`GatewayUpstream`), so another agent — the Python
 * test agent — can stand in for the SDK's.
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH, type Task } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
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
import type { Clock, Policy } from 'a2a-ratelimit';
import { createLimiter, type Limiter, type LimiterOptions } from 'a2a-ratelimit/server';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import { createGateway, type Gateway, type GatewayOptions } from 'a2a-ratelimit-gateway';
import express from 'express';

/** An upstream agent as the gateway tests see it: whatever its language. */
export interface GatewayUpstream {
  readonly baseUrl: string;
  /** Requests that reached the agent's A2A routes (the card aside), in order: `METHOD path`. */
  readonly requests: string[];
  /** Messages the agent ran (executions), by messageId. */
  readonly executions: Map<string, number>;
  /** Completes every task held WORKING by a `hold` message. */
  releaseHeld(): void;
  close(): Promise<void>;
}

/** Starts an upstream. */
export type StartUpstream = () => Promise<GatewayUpstream>;

function userFrom(value: unknown): User {
  const text = Array.isArray(value) ? value[0] : value;
  const match = typeof text === 'string' ? /^Bearer (.+)$/.exec(text) : null;
  const name = match?.[1] ?? '';
  return { isAuthenticated: name !== '', userName: name };
}

/**
 * The SDK's agent with no limiter. Message text: `hold` (a task WORKING until released or
 * cancelled), `task` (a task completed at once), anything else a direct Message reply.
 */
export const startSdkUpstream: StartUpstream = async () => {
  const executions = new Map<string, number>();
  /** Tasks held WORKING: resolve(true) when cancelled, resolve(false) when released. */
  const held = new Map<string, (canceled: boolean) => void>();
  const requests: string[] = [];
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = exampleAgentCard({
    name: 'upstream',
    interfaces: [
      { url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC' },
      { url: `${baseUrl}/a2a/rest`, protocolBinding: 'HTTP+JSON' },
    ],
  });
  const status = (state: number) => ({ state, timestamp: new Date(0).toISOString() });
  const executor: AgentExecutor = {
    async execute(ctx, bus: ExecutionEventBus) {
      const messageId = ctx.userMessage.messageId;
      executions.set(messageId, (executions.get(messageId) ?? 0) + 1);
      const part = ctx.userMessage.parts[0] as unknown as { content?: { value?: string } };
      const text = part?.content?.value ?? '';
      const { taskId, contextId } = ctx;
      if (text !== 'hold' && text !== 'task') {
        bus.publish(
          AgentEvent.message(
            textMessage({ messageId: `r-${messageId}`, text: 'ok', role: 'agent', contextId }),
          ),
        );
        bus.finished();
        return;
      }
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
      if (text === 'hold') {
        const canceled = await new Promise<boolean>((resolve) => held.set(taskId, resolve));
        if (canceled) return;
      }
      bus.publish(
        AgentEvent.statusUpdate({ taskId, contextId, status: status(3), metadata: {} } as never),
      );
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      const resolve = held.get(taskId);
      held.delete(taskId);
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: '',
          status: status(5),
          metadata: {},
        } as never),
      );
      bus.finished();
      resolve?.(true);
    },
  };
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const userBuilder = (async (req: express.Request) =>
    userFrom(req.headers.authorization)) as unknown as typeof ExpressUserBuilder.noAuthentication;
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use((req, _res, next) => {
    requests.push(`${req.method} ${req.originalUrl}`);
    next();
  });
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder }));
  return {
    baseUrl,
    requests,
    executions,
    releaseHeld() {
      for (const [id, resolve] of held) {
        held.delete(id);
        resolve(false);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const [id, release] of held) {
          held.delete(id);
          release(true);
        }
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

/** A gateway engine on loopback in front of `upstream`. */
export interface TestGateway {
  readonly baseUrl: string;
  readonly gateway: Gateway;
  readonly limiter: Limiter;
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * Starts the gateway engine (in this process) in front of `upstreamUrl`.
 *
 * @example
 * ```ts
 * const gw = await startTestGateway(upstream.baseUrl, { policies: [perCaller] });
 * ```
 */
export async function startTestGateway(
  upstreamUrl: string,
  options: {
    readonly policies: readonly Policy[];
    readonly clock?: Clock;
    readonly limiter?: Partial<LimiterOptions>;
    readonly gateway?: Partial<GatewayOptions>;
  },
): Promise<TestGateway> {
  const limiter = createLimiter({
    ...(options.limiter?.store === undefined ? { policies: options.policies } : {}),
    domain: 'gateway.example.com',
    eventLoopDelay: false,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...options.limiter,
  });
  let baseUrl = '';
  const gateway = createGateway({
    upstream: upstreamUrl,
    limiter,
    publicUrl: () => baseUrl,
    identify: (req) => {
      const auth = req.headers.authorization;
      const match = typeof auth === 'string' ? /^Bearer (.+)$/.exec(auth) : null;
      return { caller: match?.[1] ?? `addr:${req.socket.remoteAddress}` };
    },
    ...options.gateway,
  });
  const server = createServer(gateway.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await gateway.ready();
  return {
    baseUrl,
    gateway,
    limiter,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.close();
      await limiter.close();
    },
  };
}

/** A JSON-RPC SendMessage body. */
export function jsonRpcSend(messageId: string, text = 'hi', method = 'SendMessage'): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: messageId,
    method,
    params: { message: textMessageJson(messageId, text) },
  });
}

/** A message in the A2A 1.0 JSON form. */
export function textMessageJson(messageId: string, text: string): Record<string, unknown> {
  return { messageId, role: 'ROLE_USER', parts: [{ text }] };
}
