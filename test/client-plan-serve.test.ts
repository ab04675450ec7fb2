/**
 * The planned client against a separately running agent (`a2a-ratelimit serve` as its own
 * process, its default policy: the worked example, 60 SendMessage per minute per caller, burst
 * 10), on the real clock — no shared demo clock. The SDK's JSON-RPC client fetches the card
 * through our retrying fetch, which learns its policies; 30 calls at once must cost exactly 30
 * requests and no rejection, counted on both sides (the client's sends, the agent's
 * `/metrics`). The 11th send used to go out one first-request latency too early (the plan
 * started the bucket at our send, the agent at its decision) and was refused.
 */

import { SendMessageRequest } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { createRetryingFetch, RetryScheduler } from 'a2a-ratelimit/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServeProcess, startServeProcess } from './cli-process.helpers.js';

let serve: ServeProcess;
beforeAll(async () => {
  serve = await startServeProcess();
});
afterAll(async () => {
  await serve?.stop();
});

/** The agent's count of a metric for this caller (summed over its other labels). */
async function metricOf(name: string, caller: string | undefined): Promise<number> {
  const text = await (await fetch(`${serve.baseUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (caller !== undefined && !line.includes(`caller="${caller}"`)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

it('the worked example against a separate serve process, real clock: 30 requests, 0 rejections', async () => {
  const scheduler = new RetryScheduler({ agentDeduplicates: true });
  const sent: string[] = [];
  const fetchImpl = createRetryingFetch({
    scheduler,
    fetch: (input, init) => {
      sent.push(String(input instanceof Request ? input.url : input));
      return fetch(input, init);
    },
  });
  const client = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      preferredTransports: ['JSONRPC'],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  ).createFromUrl(serve.baseUrl);
  const caller = `planned-${process.pid}`;
  const admittedBefore = await metricOf('a2a_ratelimit_admissions_total', undefined);
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      client.sendMessage(
        SendMessageRequest.fromJSON({
          message: { messageId: `${caller}-${i}`, role: 'ROLE_USER', parts: [{ text: `t ${i}` }] },
        }),
        { serviceParameters: { authorization: `Bearer ${caller}` } },
      ),
    ),
  );
  expect(answers).toHaveLength(30);
  expect(scheduler.stats).toEqual({ sends: 30, retries: 0, failedCalls: 0 });
  expect(sent.filter((u) => !u.endsWith('/.well-known/agent-card.json'))).toHaveLength(30);
  expect(await metricOf('a2a_ratelimit_rejections_total', caller)).toBe(0);
  expect((await metricOf('a2a_ratelimit_admissions_total', undefined)) - admittedBefore).toBe(30);
}, 90_000);
