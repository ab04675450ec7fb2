/**
 * A client that hangs up after admission but before the SDK creates the task's bus (the SDK
 * awaits I/O in between: the push config save here; a follow-up message's task load on a
 * DatabaseTaskStore is the same window). Its ticket ends with the connection — leases freed,
 * dedup record "nothing ran" — so the SDK must not start the task after all: the tracker refuses
 * to (AdmissionEndedError). A retry then runs the message, once, inside its limit. (Found by a
 * review: the executor used to run anyway, holding no lease, and the retry ran it again.)
 */

import type { AddressInfo } from 'node:net';
import net from 'node:net';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { UserBuilder } from '@a2a-js/sdk/server/express';
import { createLimiter, withRateLimitExtension } from 'a2a-ratelimit/server';
import { rateLimitedJsonRpcHandler } from 'a2a-ratelimit/server/express';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

class SlowPushStore extends InMemoryPushNotificationStore {
  override async save(...args: Parameters<InMemoryPushNotificationStore['save']>) {
    await new Promise((r) => setTimeout(r, 100)); // a database write
    return super.save(...args);
  }
}

describe('hang-up after admission, before the SDK starts the executor', () => {
  it('a message admitted once runs once, and holds its concurrency lease while it runs', async () => {
    let runs = 0;
    const ran: string[] = [];
    let running = 0;
    let maxRunning = 0;
    const executor: AgentExecutor = {
      async execute(ctx, bus) {
        runs++;
        ran.push(ctx.userMessage.messageId);
        running++;
        maxRunning = Math.max(maxRunning, running);
        bus.publish(
          AgentEvent.task({
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: { state: 2 },
            history: [ctx.userMessage],
            artifacts: [],
          } as never),
        );
        await new Promise((r) => setTimeout(r, 800));
        running--;
        bus.publish(
          AgentEvent.message(
            textMessage({ messageId: `r-${ctx.userMessage.messageId}`, text: 'ok', role: 'agent' }),
          ),
        );
        bus.finished();
      },
      async cancelTask() {},
    };
    const card = exampleAgentCard({
      name: 'review',
      interfaces: [{ url: 'http://127.0.0.1/a2a/jsonrpc', protocolBinding: 'JSONRPC' }],
    });
    (card.capabilities as { pushNotifications: boolean }).pushNotifications = true;
    const limiter = createLimiter({
      card,
      eventLoopDelay: false,
      policies: [
        {
          name: 'tasks-per-caller',
          kind: 'concurrency',
          scope: 'caller',
          methods: ['SendMessage'],
          max: 1,
        },
      ],
    });
    const requestHandler = new DefaultRequestHandler(
      withRateLimitExtension(card, limiter),
      new InMemoryTaskStore(),
      executor,
      limiter.trackTasks(new DefaultExecutionEventBusManager()),
      new SlowPushStore(),
    );
    const app = express();
    app.use(
      '/a2a/jsonrpc',
      rateLimitedJsonRpcHandler(limiter, {
        requestHandler,
        userBuilder: UserBuilder.noAuthentication,
      }),
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    closers.push(async () => {
      await limiter.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const port = (server.address() as AddressInfo).port;
    const body = (messageId: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
          configuration: { taskPushNotificationConfig: { url: 'http://127.0.0.1:9/hook' } },
        },
      });
    const first = body('m-1');
    await new Promise<void>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(
          `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: ${first.length}\r\n\r\n${first}`,
        );
        setTimeout(() => {
          socket.destroy(); // the client's timeout: after admission, during the SDK's save
          resolve();
        }, 30);
      });
    });
    await new Promise((r) => setTimeout(r, 200)); // the SDK got to the executor by now
    expect(runs).toBe(0); // its client left before it started: not started
    expect(limiter.leasesHeld()).toBe(0);
    // The caller retries its timed-out message (same messageId), and sends another one.
    const post = (b: string) =>
      fetch(`http://127.0.0.1:${port}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
        body: b,
      }).then((r) => r.text());
    await Promise.all([post(body('m-1')), post(body('m-2'))]);
    // m-1 must not run again (it is a copy); m-2 must wait for m-1's lease (max 1).
    expect({ ran, maxRunning }).toEqual({ ran: ['m-1'], maxRunning: 1 });
  }, 10_000);
});
