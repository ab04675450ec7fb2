import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Policy } from 'a2a-ratelimit';
import { createLimiter, type Limiter } from 'a2a-ratelimit/server';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { type ClassifiedRequest, classifyJsonRpc } from './classify-request.js';
import { TaskWatch } from './task-watch.js';
import type { ProxiedInterface } from './upstream-card.js';
import { type RelayHost, relay } from './upstream-relay.js';

const streams: Policy = {
  name: 'streams',
  kind: 'concurrency',
  scope: 'caller',
  methods: ['SendStreamingMessage', 'SendMessage'],
  max: 1,
};
const IFACE: ProxiedInterface = { binding: 'jsonrpc', path: '/a2a', lowerPath: '/a2a' };

const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function hostFor(origin: string, limiter: Limiter, extra: Partial<RelayHost> = {}): RelayHost {
  const dispatcher = new Agent();
  closers.push(() => dispatcher.close());
  return {
    dispatcher,
    origin,
    limiter,
    mirrorHttpStatus: false,
    upstreamTimeoutMs: 2_000,
    unavailableRetryAfterMs: 1_000,
    maxObservedAnswerBytes: 1 << 20,
    watch: new TaskWatch(limiter, undefined),
    running: () => undefined,
    refused: () => undefined,
    ...extra,
  };
}

function streamingRequest(): ClassifiedRequest {
  const classified = classifyJsonRpc(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendStreamingMessage',
      params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'x' }] } },
    }),
    IFACE,
    '',
    64,
  );
  if (!('method' in classified)) throw new Error('not classified');
  return classified;
}

function setUp(): Limiter {
  const limiter = createLimiter({ policies: [streams], domain: 'gateway.test' });
  closers.push(() => limiter.close());
  return limiter;
}

const admitAs = async (limiter: Limiter) => {
  const outcome = await limiter.admit({
    caller: 'c',
    method: 'SendStreamingMessage',
    binding: 'jsonrpc',
  });
  return outcome;
};

describe('relay', () => {
  it('a client gone while its request was decided: nothing forwarded, its slot freed', async () => {
    const limiter = setUp();
    let forwarded = 0;
    const origin = await listen(
      createServer((req, res) => {
        forwarded++;
        req.resume();
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {}\n\n');
      }),
    );
    const host = hostFor(origin, limiter);
    const relayed: Promise<void>[] = [];
    const gateway = await listen(
      createServer((req, res) => {
        req.resume();
        // The client leaves while its request is being decided.
        res.on('close', async () => {
          const outcome = await admitAs(limiter);
          if (outcome.status !== 'admitted') throw new Error('not admitted');
          relayed.push(
            relay(host, req, res, streamingRequest(), outcome.ticket, {
              caller: 'c',
              ticketId: undefined,
              tenant: undefined,
            }),
          );
        });
      }),
    );
    const client = httpRequest(`${gateway}/a2a`, { method: 'POST' });
    client.on('error', () => undefined);
    client.end('{}');
    await new Promise((resolve) => setTimeout(resolve, 50));
    client.destroy();
    await expect.poll(() => relayed.length).toBe(1);
    await relayed[0];
    expect(forwarded).toBe(0);
    // The one stream slot is free again.
    expect((await admitAs(limiter)).status).toBe('admitted');
  }, 10_000);

  it('an operator hook that throws while the upstream is down: the admission still ends', async () => {
    const limiter = setUp();
    // A port nothing listens on: take one, then close it.
    const probe = createServer();
    const origin = await listen(probe);
    await new Promise((resolve) => probe.close(resolve));
    const host = hostFor(origin, limiter, {
      onUpstream: () => {
        throw new Error('metrics hook failed');
      },
    });
    let done: Promise<void> | undefined;
    const gateway = await listen(
      createServer(async (req, res) => {
        req.resume();
        const outcome = await admitAs(limiter);
        if (outcome.status !== 'admitted') throw new Error('not admitted');
        done = relay(host, req, res, streamingRequest(), outcome.ticket, {
          caller: 'c',
          ticketId: undefined,
          tenant: undefined,
        });
      }),
    );
    const client = httpRequest(`${gateway}/a2a`, { method: 'POST' });
    client.on('error', () => undefined);
    client.end('{}');
    await expect.poll(() => done !== undefined).toBe(true);
    await done;
    expect((await admitAs(limiter)).status).toBe('admitted');
    client.destroy();
  }, 10_000);
});
