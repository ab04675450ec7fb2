/**
 * The client's card reader against a hostile agent on loopback (a real HTTP server): a 50 MiB
 * card streamed chunked (no `Content-Length`), and one gzip-compressed whose `Content-Length`
 * (of the compressed bytes) says 50 KiB while it inflates to 50 MiB. Neither is generated whole:
 * the server writes 64 KiB chunks as the socket drains. The client stops reading at its 1 MiB
 * cap and cancels the body: the SDK's card resolver fails with a clear error, no policy is
 * learned, the bytes our fetch pulled stay within the cap (plus one chunk), and the server never
 * gets to write the whole card.
 */

import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGzip } from 'node:zlib';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { createRetryingFetch, RetryScheduler } from 'a2a-ratelimit/client';
import { afterEach, describe, expect, it } from 'vitest';

/** The documented cap on an agent card the client reads (docs/architecture.md: 1 MiB). */
const MAX_CARD_BYTES = 1_048_576;

const CARD_BYTES = 50 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x61); // 'a'
/** One chunk more than the cap: what a reader may pull before it sees it went over. */
const READ_BOUND_BYTES = MAX_CARD_BYTES + 2 * CHUNK.length;

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** What the hostile server did: bytes of card it produced, and whether it got to the end. */
interface Served {
  produced: number;
  finished: boolean;
  closed: Promise<void>;
}

/** Writes a 50 MiB card (`{"pad":"aaa…"}`) into `sink` chunk by chunk, as it drains. */
async function streamHugeCard(
  sink: NodeJS.WritableStream,
  served: Served,
  alive: () => boolean,
): Promise<void> {
  const write = async (chunk: Buffer | string) => {
    served.produced += chunk.length;
    if (!sink.write(chunk)) await Promise.race([once(sink, 'drain'), once(sink, 'close')]);
  };
  await write('{"pad":"');
  while (served.produced < CARD_BYTES && alive()) await write(CHUNK);
  if (!alive()) return;
  await write('"}');
  served.finished = true;
  sink.end();
}

async function hostileAgent(
  serve: (res: ServerResponse, served: Served) => Promise<void>,
): Promise<{ baseUrl: string; served: Served }> {
  let resolveClosed: () => void = () => {};
  const served: Served = {
    produced: 0,
    finished: false,
    closed: new Promise((resolve) => {
      resolveClosed = resolve;
    }),
  };
  const server = createServer((req, res) => {
    res.on('close', resolveClosed);
    if (req.url !== '/.well-known/agent-card.json') {
      res.writeHead(404).end();
      return;
    }
    void serve(res, served).catch(() => undefined);
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, served };
}

/** Our fetch over a fetch that counts the card bytes the client pulled from the network. */
function countingClient() {
  const scheduler = new RetryScheduler();
  const pulled = { bytes: 0 };
  const fetchImpl = createRetryingFetch({
    scheduler,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const reader = response.body?.getReader();
      if (reader === undefined) return response;
      const counted = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else {
            pulled.bytes += value.byteLength;
            controller.enqueue(value);
          }
        },
        cancel: (reason) => reader.cancel(reason),
      });
      return new Response(counted, { status: response.status, headers: response.headers });
    },
  });
  return { scheduler, fetchImpl, pulled };
}

describe('card reader against a hostile agent', () => {
  it('a chunked 50 MiB card: the read stops at 1 MiB with a clear error, nothing is learned', async () => {
    const agent = await hostileAgent(async (res, served) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // chunked: no length
      await streamHugeCard(res, served, () => !res.destroyed);
    });
    const client = countingClient();
    const resolving = new DefaultAgentCardResolver({ fetchImpl: client.fetchImpl }).resolve(
      agent.baseUrl,
    );
    await expect(resolving).rejects.toThrow(/agent card is larger than 1048576 bytes/);
    await agent.served.closed;
    expect(client.pulled.bytes).toBeGreaterThan(MAX_CARD_BYTES);
    expect(client.pulled.bytes).toBeLessThanOrEqual(READ_BOUND_BYTES);
    expect(agent.served.finished).toBe(false);
    // Socket buffers aside, the server was stopped far before the end of its card.
    expect(agent.served.produced).toBeLessThan(CARD_BYTES / 2);
    expect(client.scheduler.pacers.knows(agent.baseUrl)).toBe(false);
  });

  it('a gzip card whose Content-Length (50 KiB, compressed) lies about its 50 MiB: stopped at the cap', async () => {
    // The compressed card, made by streaming (its 50 MiB never exist at once).
    const compressed: Buffer[] = [];
    const gzip = createGzip();
    gzip.on('data', (c: Buffer) => compressed.push(c));
    const ended = once(gzip, 'end');
    await streamHugeCard(
      gzip,
      { produced: 0, finished: false, closed: Promise.resolve() },
      () => true,
    );
    await ended;
    const body = Buffer.concat(compressed);
    expect(body.length).toBeLessThan(MAX_CARD_BYTES); // what Content-Length will declare
    const agent = await hostileAgent(async (res, served) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': String(body.length),
      });
      served.produced = body.length;
      res.end(body);
    });
    const client = countingClient();
    await expect(
      new DefaultAgentCardResolver({ fetchImpl: client.fetchImpl }).resolve(agent.baseUrl),
    ).rejects.toThrow(/agent card is larger than 1048576 bytes/);
    expect(client.pulled.bytes).toBeGreaterThan(MAX_CARD_BYTES);
    expect(client.pulled.bytes).toBeLessThanOrEqual(READ_BOUND_BYTES);
    expect(client.scheduler.pacers.knows(agent.baseUrl)).toBe(false);
  });
});
