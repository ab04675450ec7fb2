/**
 * Gateway tests' parts: an upstream A2A agent with NO limiter of ours (the SDK's
 * `DefaultRequestHandler` behind its own JSON-RPC and REST routers, on 127.0.0.1) that counts every
 * request it sees and every execution, and the gateway engine in front of it on 127.0.0.1 (port 0).
 * The upstream is a parameter of every test (`GatewayUpstream`, its counts read asynchronously):
 * the Python test agent stands in for the SDK's (`GATEWAY_UPSTREAMS`).
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH, type AgentCard, type Task } from '@a2a-js/sdk';
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
import {
  pythonAgentRequired,
  pythonAgentSupport,
  startPythonAgent,
} from './python-agent.helpers.js';

/** What an upstream received, read from wherever it keeps count (its process or another). */
export interface UpstreamSeen {
  /** Requests that reached the agent's A2A routes (the card aside), counted exactly. */
  readonly requests: number;
  /** The latest requests, oldest first, `METHOD path` (a bounded log: the Python agent's last 500). */
  readonly recent: readonly string[];
  /** Messages the agent ran (executions), by messageId, counted exactly. */
  readonly runs: Readonly<Record<string, number>>;
}

/**
 * An upstream agent as the gateway tests see it, whatever its language. Message text: `hold` (a
 * task WORKING until released or cancelled), `task` (a task completed at once), anything else a
 * direct Message reply; SendMessage blocks until the task ends unless `returnImmediately`.
 */
export interface GatewayUpstream {
  readonly baseUrl: string;
  seen(): Promise<UpstreamSeen>;
  /** Completes every task held WORKING by a `hold` message. */
  releaseHeld(): Promise<void>;
  /** Answers every A2A call with a plain `status` and `Retry-After: seconds` (null: stop). */
  reject(status: 429 | 503 | null, retryAfterSeconds?: number): Promise<void>;
  /** Dies at once, connections cut (the SDK's server closed; the Python process SIGKILLed). */
  die(): Promise<void>;
  close(): Promise<void>;
}

/** The SDK upstream, whose counts also live in this process. */
export interface SdkUpstream extends GatewayUpstream {
  /** Requests that reached the agent's A2A routes (the card aside), in order: `METHOD path`. */
  readonly requests: string[];
  /** Messages the agent ran (executions), by messageId. */
  readonly executions: Map<string, number>;
}

/** Starts an upstream. */
export type StartUpstream = () => Promise<GatewayUpstream>;

/** The requests `upstream` received since it had counted `before` (throws if its log lost some). */
export async function requestsSince(upstream: GatewayUpstream, before: number): Promise<string[]> {
  const seen = await upstream.seen();
  const count = seen.requests - before;
  if (count > seen.recent.length)
    throw new Error(`upstream log holds ${seen.recent.length} < ${count}`);
  return seen.recent.slice(seen.recent.length - count);
}

/** Polls (no timed assertion) until `condition` holds. */
export async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * The Python standard-library agent (test/fixtures/python-agent) in its scripted mode
 * (`--answer by-text --blocking`): the same text commands as the SDK upstream.
 */
export const startPythonUpstream: StartUpstream = async () => {
  const agent = await startPythonAgent({ answer: 'by-text', blocking: true });
  return {
    baseUrl: agent.url,
    async seen() {
      const [counts, log] = await Promise.all([agent.counts(), agent.requests()]);
      return {
        requests: counts.requests,
        recent: log.map((r) => `${r.httpMethod ?? 'GRPC'} ${r.path}`),
        runs: counts.runsByMessageId,
      };
    },
    releaseHeld: () => agent.releaseHeld(),
    reject: (status, retryAfterSeconds = 0) =>
      agent.setMode({ reject: status, retryAfter: retryAfterSeconds }),
    die: () => agent.kill(),
    close: () => agent.stop(),
  };
};

function userFrom(value: unknown): User {
  const text = Array.isArray(value) ? value[0] : value;
  const match = typeof text === 'string' ? /^Bearer (.+)$/.exec(text) : null;
  const name = match?.[1] ?? '';
  return { isAuthenticated: name !== '', userName: name };
}

/** How the SDK upstream behaves beyond its defaults. */
export interface SdkUpstreamOptions {
  /**
   * `metadata.usage.totalTokens` of every completed task's final status update (and so of the
   * final Task); a message overrides it with `metadata.fixture.usageTokens` (any JSON value, so a
   * test can send a report that is not a number; null for no report), as the Python agent does.
   */
  readonly usageTokens?: number;
  /**
   * Serve an extended card (`capabilities.extendedAgentCard`): the card named `upstream (extended
   * for <user>)`, the user being the request's `Authorization: Bearer` value.
   */
  readonly extendedCard?: boolean;
}

/** The usage a completed task of `message` reports, or undefined for none. */
function usageOf(message: { metadata?: unknown }, options: SdkUpstreamOptions): unknown {
  const fixture = (message.metadata as { fixture?: Record<string, unknown> } | undefined)?.fixture;
  // null: this task reports nothing.
  if (fixture !== undefined && Object.hasOwn(fixture, 'usageTokens')) {
    return fixture.usageTokens === null ? undefined : fixture.usageTokens;
  }
  return options.usageTokens;
}

/**
 * The test agents' executor: a message's text picks the answer (`hold`: a task held WORKING until
 * released or cancelled; `task`: a task completed at once; anything else: a Message), counting
 * executions by messageId; the final status carries the usage report `options` asks for.
 */
export function scriptedExecutor(
  executions: Map<string, number>,
  held: Map<string, (canceled: boolean) => void>,
  options: SdkUpstreamOptions = {},
): AgentExecutor {
  const status = (state: number) => ({ state, timestamp: new Date(0).toISOString() });
  return {
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
      const usage = usageOf(ctx.userMessage, options);
      const metadata = usage === undefined ? {} : { usage: { totalTokens: usage } };
      bus.publish(
        AgentEvent.statusUpdate({ taskId, contextId, status: status(3), metadata } as never),
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
}

/**
 * The SDK's request handler of a test upstream: `baseCard` (with `extendedAgentCard` when
 * `extended`), an in-memory task store, and an extended card naming the user it was asked as
 * (plus `extensions` on its capabilities, when given).
 */
export function upstreamRequestHandler(
  baseCard: AgentCard,
  executor: AgentExecutor,
  extended: boolean,
  extensions?: readonly unknown[],
): DefaultRequestHandler {
  const card = extended
    ? ({
        ...baseCard,
        capabilities: { ...baseCard.capabilities, extendedAgentCard: true },
      } as AgentCard)
    : baseCard;
  return new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor,
    undefined,
    undefined,
    undefined,
    extended
      ? async (context?: { user?: User | undefined }) =>
          ({
            ...card,
            name: `upstream (extended for ${context?.user?.userName ?? ''})`,
            ...(extensions === undefined
              ? {}
              : { capabilities: { ...card.capabilities, extensions } }),
          }) as unknown as AgentCard
      : undefined,
  );
}

/**
 * The SDK's agent with no limiter. Message text: `hold` (a task WORKING until released or
 * cancelled), `task` (a task completed at once), anything else a direct Message reply.
 */
export const startSdkUpstream = async (options: SdkUpstreamOptions = {}): Promise<SdkUpstream> => {
  let rejecting: { status: number; retryAfter: number } | null = null;
  const executions = new Map<string, number>();
  /** Tasks held WORKING: resolve(true) when cancelled, resolve(false) when released. */
  const held = new Map<string, (canceled: boolean) => void>();
  const requests: string[] = [];
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const baseCard = exampleAgentCard({
    name: 'upstream',
    interfaces: [
      { url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC' },
      { url: `${baseUrl}/a2a/rest`, protocolBinding: 'HTTP+JSON' },
    ],
  });
  const requestHandler = upstreamRequestHandler(
    baseCard,
    scriptedExecutor(executions, held, options),
    options.extendedCard === true,
  );
  const userBuilder = (async (req: express.Request) =>
    userFrom(req.headers.authorization)) as unknown as typeof ExpressUserBuilder.noAuthentication;
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use((req, res, next) => {
    requests.push(`${req.method} ${req.originalUrl}`);
    if (rejecting === null) return next();
    res
      .status(rejecting.status)
      .set('retry-after', String(rejecting.retryAfter))
      .type('text/plain');
    res.send(rejecting.status === 429 ? 'API rate limit exceeded' : 'Service Unavailable');
  });
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder }));
  const close = () =>
    new Promise<void>((resolve) => {
      for (const [id, release] of held) {
        held.delete(id);
        release(true);
      }
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    baseUrl,
    requests,
    executions,
    async seen() {
      return {
        requests: requests.length,
        recent: [...requests],
        runs: Object.fromEntries(executions),
      };
    },
    async releaseHeld() {
      for (const [id, resolve] of held) {
        held.delete(id);
        resolve(false);
      }
    },
    async reject(status, retryAfterSeconds = 0) {
      rejecting = status === null ? null : { status, retryAfter: retryAfterSeconds };
    },
    die: close,
    close,
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

/**
 * The upstreams every upstream-specific gateway test runs against: the SDK's, and the Python
 * agent where a python3 is here (always under CI=true, where a missing one fails).
 */
export const GATEWAY_UPSTREAMS: readonly (readonly [string, StartUpstream])[] = [
  ['sdk', startSdkUpstream as StartUpstream],
  ...(pythonAgentSupport().available || pythonAgentRequired
    ? [['python', startPythonUpstream] as const]
    : []),
];
