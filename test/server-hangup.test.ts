/**
 * A client that sends a whole request and hangs up at once, against the README quick start's
 * Express agent with a `UserBuilder` that takes a moment (a token checked against an identity
 * provider; the same window opens with any asynchronous store such as `RedisStore`): when the
 * decision comes after the connection closed, its ticket is ended at once and nothing runs, so
 * no lease (the agent-wide in-flight count here) outlives the request. (Found by attacking the
 * server: the leases used to be held for as long as the process lived.)
 */

import type { AddressInfo } from 'node:net';
import net from 'node:net';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type User,
} from '@a2a-js/sdk/server';
import { createLimiter, type Limiter, withRateLimitExtension } from 'a2a-ratelimit/server';
import { rateLimitedJsonRpcHandler, rateLimitedRestHandler } from 'a2a-ratelimit/server/express';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const executor: AgentExecutor = {
  async execute(ctx, bus) {
    bus.publish(
      AgentEvent.message(
        textMessage({ messageId: `r-${ctx.userMessage.messageId}`, text: 'ok', role: 'agent' }),
      ),
    );
    bus.finished();
  },
  async cancelTask() {},
};

/** The README quick start's Express agent, with an identity check that takes `authMs`. */
async function readmeAgent(authMs: number): Promise<{ port: number; limiter: Limiter }> {
  const card = exampleAgentCard({
    name: 'attack',
    description: 'README agent',
    interfaces: [
      { url: 'http://127.0.0.1/a2a/jsonrpc', protocolBinding: 'JSONRPC' },
      { url: 'http://127.0.0.1/a2a/rest', protocolBinding: 'HTTP+JSON' },
    ],
  });
  const limiter = createLimiter({
    card,
    eventLoopDelay: false,
    policies: [{ name: 'agent-overload', kind: 'overload', maxInFlight: 3 }],
  });
  const requestHandler = new DefaultRequestHandler(
    withRateLimitExtension(card, limiter),
    new InMemoryTaskStore(),
    executor,
    limiter.trackTasks(new DefaultExecutionEventBusManager()),
  );
  const userBuilder = async (req: express.Request): Promise<User> => {
    await new Promise((resolve) => setTimeout(resolve, authMs)); // e.g. a token introspection call
    const name = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    return { isAuthenticated: name !== '', userName: name };
  };
  const sdk = { requestHandler, userBuilder };
  const app = express();
  app.use('/a2a/jsonrpc', rateLimitedJsonRpcHandler(limiter, sdk));
  app.use('/a2a/rest', rateLimitedRestHandler(limiter, sdk));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  closers.push(async () => {
    await limiter.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, limiter };
}

/** Writes one whole request and closes the connection without waiting for the answer. */
function sendAndHangUp(port: number, request: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.end(request, () => {
        socket.destroy();
        resolve();
      });
    });
    socket.on('error', () => resolve());
  });
}

describe('hang up while the admission is still deciding (README Express agent)', () => {
  it.each([
    [
      'REST ListTasks',
      'GET /a2a/rest/tasks HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nAuthorization: Bearer mallory\r\n\r\n',
    ],
    [
      'JSON-RPC GetTask',
      (() => {
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'GetTask',
          params: { id: 'nope' },
        });
        return `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nAuthorization: Bearer mallory\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      })(),
    ],
  ])(
    '%s: three hung-up requests leave no lease held and do not lock out the next caller',
    async (_label, request) => {
      const { port, limiter } = await readmeAgent(30);
      for (let i = 0; i < 3; i++) await sendAndHangUp(port, request);
      // Every request has been decided and its connection is gone.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(limiter.leasesHeld()).toBe(0);
      const res = await fetch(`http://127.0.0.1:${port}/a2a/rest/tasks`, {
        headers: { 'a2a-version': '1.0', authorization: 'Bearer alice' },
      });
      expect(await res.text()).not.toContain('AGENT_OVERLOADED');
    },
  );
});
