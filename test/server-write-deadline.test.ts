/**
 * The HTTP side of the response write deadline: a caller that opens a stream and never reads it
 * (here one 32 MB event, more than the socket buffers hold) leaves bytes the server cannot write;
 * past `writeDeadlineMs` the adapter destroys the socket, the response closes and its lease is
 * released. (A unary answer needs no deadline over HTTP/1.1: its response ends — and releases its
 * leases — once the bytes are handed to the socket.) Real Express, real SDK handler, a raw TCP
 * client on loopback.
 */

import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import * as net from 'node:net';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { UserBuilder } from '@a2a-js/sdk/server/express';
import { createLimiter } from 'a2a-ratelimit/server';
import { rateLimitedRestHandler } from 'a2a-ratelimit/server/express';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';

const BIG = 'x'.repeat(32 * 1024 * 1024);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('HTTP response write deadline', () => {
  it('a response the caller never reads is ended at the deadline and its lease released', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'agent-overload', kind: 'overload', maxInFlight: 100 }],
      domain: 'agents.example.com',
      dedup: false,
      eventLoopDelay: false,
    });
    cleanups.push(() => limiter.close());
    // A task that streams one large status update, then stays open until the test ends.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    cleanups.push(() => release());
    const executor: AgentExecutor = {
      async execute(ctx, bus) {
        const status = (text: string) => ({
          state: 2,
          message: textMessage({ messageId: `s-${text.length}`, text, role: 'agent' }),
          timestamp: new Date(0).toISOString(),
        });
        bus.publish(
          AgentEvent.task({
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: status('working'),
            artifacts: [],
            history: [ctx.userMessage],
            metadata: {},
          } as never),
        );
        bus.publish(
          AgentEvent.statusUpdate({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            status: status(BIG),
            metadata: {},
          } as never),
        );
        await held;
        bus.finished();
      },
      async cancelTask() {},
    };
    const card = exampleAgentCard({
      name: 'write-deadline',
      description: 'big replies',
      interfaces: [{ url: 'http://127.0.0.1/a2a/rest', protocolBinding: 'HTTP+JSON' }],
    });
    const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
    const app = express();
    app.use(
      '/a2a/rest',
      rateLimitedRestHandler(limiter, {
        requestHandler,
        userBuilder: UserBuilder.noAuthentication,
        admission: { writeDeadlineMs: 300 },
      }),
    );
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const { port } = server.address() as AddressInfo;
    const body = JSON.stringify({
      message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'big please' }] },
    });
    const request =
      'POST /a2a/rest/message:stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      `A2A-Version: 1.0\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

    // A caller that opens the stream and never reads it: the server has bytes it cannot write.
    const accepted = once(server, 'connection') as Promise<[net.Socket]>;
    const stuck = net.connect(port, '127.0.0.1');
    stuck.pause();
    cleanups.push(() => void stuck.destroy());
    stuck.write(request);
    const [serverSide] = await accepted;
    const closed = once(serverSide, 'close');
    // The stream is admitted (its leases taken), then stuck; past the deadline the server destroys
    // its socket, which closes the response and releases the leases — the task keeps running.
    await closed;
    await new Promise((resolve) => setImmediate(resolve));
    expect(limiter.leasesHeld()).toBe(0);
  });
});
