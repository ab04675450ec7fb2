/**
 * End to end with the SDK: a real `@a2a-js/sdk` agent (`DefaultRequestHandler` with our sender as
 * its 6th argument, served by the SDK's Express routers on 127.0.0.1), the SDK's own client sending
 * a streamed message that carries a push config, and a webhook on 127.0.0.1 rate-limited by our
 * limiter. Real time, with the limit scaled so the test takes a few seconds.
 */

import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH, type Message, type SendMessageRequest, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import type { Clock } from 'a2a-ratelimit';
import { RateLimitedPushSender } from 'a2a-ratelimit/push';
import { textMessage } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { limitedResponder, startWebhook } from './push-webhook.helpers.js';
import { agentCard, userMessage } from './sdk-agent.helpers.js';

/** Real time (the library keeps its own system clock internal). */
const systemClock: Clock = { nowMs: () => Date.now() };

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function agentMessage(ctx: { taskId: string; contextId: string }, text: string): Message {
  const messageId = `${ctx.taskId}-${text.replace(/\W+/g, '-')}`;
  return textMessage({ messageId, text, role: 'agent', ...ctx });
}

/** A task that works in four quick steps, produces one artifact, and completes. */
const stepsExecutor: AgentExecutor = {
  async execute(ctx, bus) {
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    const status = (state: TaskState, text: string) =>
      AgentEvent.statusUpdate({
        ...ids,
        status: {
          state,
          message: agentMessage(ids, text),
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      });
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: {
          state: TaskState.TASK_STATE_SUBMITTED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    for (let step = 1; step <= 4; step++) {
      bus.publish(status(TaskState.TASK_STATE_WORKING, `step ${step}`));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        ...ids,
        artifact: {
          artifactId: 'result',
          name: 'result',
          description: '',
          parts: [
            {
              content: { $case: 'text', value: 'forty-two' },
              metadata: undefined,
              filename: '',
              mediaType: 'text/plain',
            },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(status(TaskState.TASK_STATE_COMPLETED, 'done'));
    bus.finished();
  },
  async cancelTask() {},
};

describe('RateLimitedPushSender wired into the SDK agent', () => {
  it('a streamed message with a push config: the push updates reach the webhook, in order, within its limit', async () => {
    // The webhook: 2 POSTs per second, burst 1, our limiter on the wall clock; silent until it refuses.
    const webhook = await startWebhook({
      clock: systemClock,
      respond: limitedResponder(
        systemClock,
        { limit: 2, windowSeconds: 1, burst: 1 },
        { announceOnSuccess: false },
      ),
    });
    closers.push(webhook.close);

    const pushStore = new InMemoryPushNotificationStore();
    // The webhook is on 127.0.0.1: a loopback test opts in to private networks.
    const sender = new RateLimitedPushSender(pushStore, {
      random: () => 0,
      policy: { allowPrivateNetworks: true },
    });
    closers.push(() => sender.close());

    const app = express();
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const card = agentCard([{ url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC' }]);
    (card.capabilities as { pushNotifications: boolean }).pushNotifications = true;
    const requestHandler = new DefaultRequestHandler(
      card,
      new InMemoryTaskStore(),
      stepsExecutor,
      undefined,
      pushStore,
      sender,
    );
    app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
    app.use(
      '/a2a/jsonrpc',
      jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }),
    );

    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory()],
      }),
    );
    const client = await factory.createFromUrl(baseUrl);
    const request = {
      message: userMessage('push-1', 'compute'),
      configuration: {
        acceptedOutputModes: [],
        returnImmediately: false,
        taskPushNotificationConfig: {
          tenant: '',
          id: '',
          taskId: '',
          url: webhook.url,
          token: '',
          authentication: { scheme: 'Bearer', credentials: 'client-secret' },
        },
      },
    } as unknown as SendMessageRequest;
    const streamed: string[] = [];
    let taskId = '';
    for await (const event of client.sendMessageStream(request)) {
      streamed.push(event.payload?.$case ?? '');
      if (event.payload?.$case === 'task') taskId = event.payload.value.id;
    }
    expect(streamed.at(-1)).toBe('statusUpdate');
    expect(taskId).not.toBe('');

    const startMs = Date.now();
    await sender.drain();
    const waitedMs = Date.now() - startMs;
    const arrivals = webhook.arrivals;
    const delivered = arrivals.filter((a) => a.status === 200);
    console.log(
      `[push] SDK agent → webhook: ${streamed.length} events streamed, ${arrivals.length} POSTs ` +
        `(${delivered.length} delivered, ${arrivals.length - delivered.length} refused), ` +
        `${sender.stats().dropped.coalesced} coalesced, drained in ${waitedMs} ms`,
    );

    // The webhook got the SDK's POSTs for this task: media type, the config's credentials.
    expect(arrivals.every((a) => a.taskId === taskId)).toBe(true);
    expect(new Set(arrivals.map((a) => a.headers['content-type']))).toEqual(
      new Set(['application/a2a+json']),
    );
    expect(new Set(arrivals.map((a) => a.headers.authorization))).toEqual(
      new Set(['Bearer client-secret']),
    );
    // The task snapshot first, the artifact, and the terminal state last.
    expect(delivered[0]?.kind).toBe('task');
    expect(delivered.map((a) => a.kind)).toContain('artifactUpdate');
    expect(delivered.at(-1)?.state).toBe('TASK_STATE_COMPLETED');
    const order = delivered.map((a) => a.kind);
    expect(order.indexOf('artifactUpdate')).toBeLessThan(order.lastIndexOf('statusUpdate'));
    // Refusals were retried, never before the webhook's time; nothing was lost but coalesced updates.
    for (const [i, a] of arrivals.entries()) {
      if (a.notBeforeMs === undefined) continue;
      const retry = arrivals.slice(i + 1).find((b) => b.bodyText === a.bodyText);
      expect(retry?.atMs).toBeGreaterThanOrEqual(a.notBeforeMs);
    }
    const stats = sender.stats();
    expect(stats.delivered + stats.dropped.coalesced).toBe(stats.accepted);
    expect(stats.accepted).toBe(streamed.length);
  });
});
