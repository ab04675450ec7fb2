/**
 * Streams through the gateway, with the SDK's own client on JSON-RPC and REST: events are relayed
 * one by one as the upstream sends them (the first arrives while the task is still WORKING on the
 * upstream, so nothing waits for the stream's end), every limit is checked before the first byte
 * (a 4th stream over `max: 3` is refused before the upstream sees it), and the stream's slot is
 * held until the stream ends. The upstream is a parameter.
 */

import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import type { ConcurrencyPolicy } from 'a2a-ratelimit';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { GATEWAY_UPSTREAMS, startTestGateway } from './gateway.helpers.js';

const UPSTREAMS = GATEWAY_UPSTREAMS;
const BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const;

const streams: ConcurrencyPolicy = {
  name: 'streams-per-caller',
  kind: 'concurrency',
  scope: 'caller',
  methods: ['SendStreamingMessage'],
  max: 3,
};

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

describe.each(UPSTREAMS)('streams through the gateway (upstream: %s)', (_name, start) => {
  it.each(BINDINGS)(
    '%s: relayed event by event; a 4th stream refused; slots held until the streams end',
    async (binding) => {
      const upstream = await start();
      closers.push(upstream.close);
      const gw = await startTestGateway(upstream.baseUrl, {
        policies: [streams],
        gateway: { taskPolling: { firstDelayMs: 20, maxDelayMs: 50, maxPolls: 100 } },
      });
      closers.push(gw.close);
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new JsonRpcTransportFactory(), new RestTransportFactory()],
          preferredTransports: [binding],
        }),
      );
      const client = await factory.createFromUrl(gw.baseUrl);
      const open = [1, 2, 3].map((i) =>
        client
          .sendMessageStream({
            message: textMessage({ messageId: `s-${binding}-${i}`, text: 'hold' }),
          } as never)
          [Symbol.asyncIterator](),
      );
      // The first event of each stream (the WORKING task) arrives while the upstream still runs it.
      const firsts = await Promise.all(open.map((it) => it.next()));
      for (const first of firsts) {
        expect(first.done).toBe(false);
        expect(JSON.stringify(first.value)).toContain('"state":2');
      }
      expect(Object.keys((await upstream.seen()).runs)).toHaveLength(3);

      const before = (await upstream.seen()).requests;
      const refused = await (async () => {
        try {
          for await (const _ of client.sendMessageStream({
            message: textMessage({ messageId: `s-${binding}-4`, text: 'hold' }),
          } as never)) {
            return 'admitted';
          }
          return 'empty';
        } catch (error) {
          return String((error as Error).message);
        }
      })();
      expect(refused).not.toBe('admitted');
      expect((await upstream.seen()).requests).toBe(before);

      // The upstream completes the tasks: each stream relays the COMPLETED event, then ends.
      await upstream.releaseHeld();
      for (const it of open) {
        const rest: unknown[] = [];
        for (let next = await it.next(); !next.done; next = await it.next()) rest.push(next.value);
        expect(JSON.stringify(rest.at(-1))).toContain('"state":3');
      }
      await new Promise<void>((resolve) => {
        const check = (): void => {
          if (gw.gateway.inFlight() === 0 && gw.limiter.leasesHeld() === 0) resolve();
          else setTimeout(check, 20);
        };
        check();
      });
      const events: unknown[] = [];
      for await (const event of client.sendMessageStream({
        message: textMessage({ messageId: `s-${binding}-5`, text: 'task' }),
      } as never)) {
        events.push(event);
      }
      expect(JSON.stringify(events.at(-1))).toContain('"state":3');
    },
  );
});
