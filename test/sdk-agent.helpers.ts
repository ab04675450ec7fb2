/**
 * A real `@a2a-js/sdk` agent for the client's adapter tests: an echo executor behind the SDK's
 * own `DefaultRequestHandler`, served by the SDK's Express routers (JSON-RPC at `/a2a/jsonrpc`,
 * REST at `/a2a/rest`) on 127.0.0.1, with a test-supplied gatekeeper in front that may refuse a
 * request first (the way a limiter or a gateway would), and a log of every arrival.
 */

import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH, type AgentCard, type Message } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import {
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
  UserBuilder,
} from '@a2a-js/sdk/server/express';
import { type A2AMethod, toA2AMethod } from 'a2a-ratelimit';
import { isRestRoute, matchRestRoute } from 'a2a-ratelimit/server';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import express from 'express';

/** One request that reached the HTTP server. */
export interface Arrival {
  readonly atMs: number;
  readonly binding: 'jsonrpc' | 'rest';
  readonly method: A2AMethod;
  readonly messageId: string | undefined;
  /** How the gatekeeper answered (undefined: passed to the SDK). */
  readonly refusedWith?: number;
  /** `Retry-After` seconds sent with the refusal, if any. */
  readonly retryAfterSeconds?: number;
}

/** A refusal the gatekeeper sends instead of letting the SDK answer. */
export interface Refusal {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Decides, per arrival, whether to refuse it. `index` counts arrivals of that messageId / method. */
export type Gatekeeper = (
  arrival: Omit<Arrival, 'atMs'>,
  index: number,
  body: unknown,
) => Refusal | undefined;

/** A user message as the SDK client sends it. */
export function userMessage(messageId: string, text = 'hello'): Message {
  return textMessage({ messageId, text });
}

const echoExecutor: AgentExecutor = {
  async execute(ctx, bus) {
    bus.publish(
      AgentEvent.message(
        textMessage({
          messageId: `reply-${ctx.userMessage.messageId}`,
          text: 'echo',
          role: 'agent',
          contextId: ctx.contextId,
        }),
      ),
    );
    bus.finished();
  },
  async cancelTask() {},
};

/** The SDK's request handler for an echo agent described by `card`. */
export function echoRequestHandler(card: AgentCard): DefaultRequestHandler {
  return new DefaultRequestHandler(card, new InMemoryTaskStore(), echoExecutor);
}

/** A minimal 1.0 agent card. */
export function agentCard(interfaces: { url: string; protocolBinding: string }[]): AgentCard {
  return exampleAgentCard({ name: 'echo', description: 'echo agent for client tests', interfaces });
}

/** Starts the agent on 127.0.0.1 (port 0). */
export async function startSdkAgent(options: {
  gatekeeper: Gatekeeper;
  nowMs: () => number;
}): Promise<{ baseUrl: string; arrivals: Arrival[]; close: () => Promise<void> }> {
  const arrivals: Arrival[] = [];
  const counts = new Map<string, number>();
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = agentCard([
    { url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC' },
    { url: `${baseUrl}/a2a/rest`, protocolBinding: 'HTTP+JSON' },
  ]);
  const requestHandler = echoRequestHandler(card);

  app.use(express.json({ type: ['application/json', 'application/a2a+json'] }));
  app.use((req, res, next) => {
    if (!req.path.startsWith('/a2a/')) return next();
    const seen = identify(req.method, req.path, req.body);
    if (seen === undefined) return next();
    const key = seen.messageId ?? seen.method;
    const index = counts.get(key) ?? 0;
    counts.set(key, index + 1);
    const refusal = options.gatekeeper(seen, index, req.body);
    const retryAfter = refusal?.headers['retry-after'] ?? refusal?.headers['Retry-After'];
    arrivals.push({
      atMs: options.nowMs(),
      ...seen,
      ...(refusal === undefined ? {} : { refusedWith: refusal.status }),
      ...(retryAfter === undefined ? {} : { retryAfterSeconds: Number(retryAfter) }),
    });
    if (refusal === undefined) return next();
    res.status(refusal.status).set(refusal.headers).send(refusal.body);
  });
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }),
  );
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));

  return {
    baseUrl,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The binding, operation and messageId of a request to `/a2a/jsonrpc` or `/a2a/rest`. */
function identify(
  httpMethod: string,
  path: string,
  body: unknown,
): Pick<Arrival, 'binding' | 'method' | 'messageId'> | undefined {
  if (isRecord(body) && body.jsonrpc === '2.0') {
    const method = toA2AMethod(body.method);
    return method === undefined
      ? undefined
      : { binding: 'jsonrpc', method, messageId: messageIdOf(body.params) };
  }
  if (!path.startsWith('/a2a/rest/')) return undefined;
  const found = matchRestRoute(httpMethod, path.slice('/a2a/rest'.length));
  return isRestRoute(found)
    ? { binding: 'rest', method: found.method, messageId: messageIdOf(body) }
    : undefined;
}

function messageIdOf(params: unknown): string | undefined {
  const message = isRecord(params) ? params.message : undefined;
  return isRecord(message) && typeof message.messageId === 'string' ? message.messageId : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
