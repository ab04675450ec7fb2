/**
 * The default identity of callers the agent does not authenticate: their address as Express
 * sees it. A forwarded-for header counts only when Express is told to trust the proxy.
 */

import type { AddressInfo } from 'node:net';
import { DefaultRequestHandler, InMemoryTaskStore, UnauthenticatedUser } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { createLimiter, type Limiter } from 'a2a-ratelimit/server';
import {
  jsonRpcAdmission,
  type RateLimitedHandlerOptions,
  rateLimitedJsonRpcHandler,
  shareUserBuilder,
} from 'a2a-ratelimit/server/express';
import { exampleAgentCard } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { countingEchoExecutor } from './echo-executor.helpers.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** A limiter with one per-caller SendMessage rate limit, deduplication off. */
function perCallerLimiter(limit: number): Limiter {
  return createLimiter({
    policies: [
      {
        name: 'per-caller',
        kind: 'rate',
        scope: 'caller',
        methods: ['SendMessage'],
        limit,
        windowSeconds: 3600,
        burst: limit,
      },
    ],
    domain: 'agents.example.com',
    dedup: false,
  });
}

async function start(
  trustProxy: string | false,
  userBuilder?: UserBuilder,
): Promise<{ url: string; limiter: Limiter }> {
  const limiter = perCallerLimiter(1);
  const app = express();
  app.set('trust proxy', trustProxy);
  app.use('/rpc', jsonRpcAdmission(limiter, userBuilder === undefined ? {} : { userBuilder }));
  app.use('/rpc', (_req, res) => {
    res.json({ jsonrpc: '2.0', id: 1, result: {} });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await limiter.close();
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`, limiter };
}

async function send(url: string, forwardedFor: string): Promise<'admitted' | 'rejected'> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'a2a-version': '1.0',
      'x-forwarded-for': forwardedFor,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: `m-${forwardedFor}`, role: 'ROLE_USER', parts: [] } },
    }),
  });
  const body = (await res.json()) as { error?: unknown };
  return body.error === undefined ? 'admitted' : 'rejected';
}

describe('default identity of unauthenticated callers', () => {
  it('without trust proxy: the socket address; a forwarded-for header changes nothing', async () => {
    const { url } = await start(false);
    expect(await send(url, '203.0.113.1')).toBe('admitted');
    expect(await send(url, '203.0.113.2')).toBe('rejected'); // same socket address
  });

  it('with trust proxy: the forwarded client address, as req.ip gives it', async () => {
    const { url } = await start('loopback');
    expect(await send(url, '203.0.113.1')).toBe('admitted');
    expect(await send(url, '203.0.113.2')).toBe('admitted');
    expect(await send(url, '203.0.113.1')).toBe('rejected');
  });

  it("with the SDK's noAuthentication builder: the same address key", async () => {
    const { url } = await start('loopback', UserBuilder.noAuthentication);
    expect(await send(url, '203.0.113.7')).toBe('admitted');
    expect(await send(url, '203.0.113.7')).toBe('rejected');
    expect(await send(url, '203.0.113.8')).toBe('admitted');
  });
});

/**
 * An SDK agent (echo executor) behind admission on `/rpc`, mounted as `mount` says: `combined`
 * (`rateLimitedJsonRpcHandler`), or `jsonRpcAdmission` then `jsonRpcHandler` with the
 * `userBuilder` given to both as it is (`plain`) or wrapped in `shareUserBuilder` (`shared`).
 */
async function startSdkAgent(
  mount: 'combined' | 'plain' | 'shared',
  userBuilder: UserBuilder,
  limit: number,
  admission: RateLimitedHandlerOptions['admission'] = {},
): Promise<{ url: string; executions: () => number }> {
  const limiter = perCallerLimiter(limit);
  const { executor: echo, executions } = countingEchoExecutor();
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`;
  const card = exampleAgentCard({
    name: 'ids',
    interfaces: [{ url, protocolBinding: 'JSONRPC' }],
  });
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
  if (mount === 'combined') {
    app.use('/rpc', rateLimitedJsonRpcHandler(limiter, { requestHandler, userBuilder, admission }));
  } else {
    const users = mount === 'shared' ? shareUserBuilder(userBuilder) : userBuilder;
    app.use(
      '/rpc',
      jsonRpcAdmission(limiter, { userBuilder: users }),
      jsonRpcHandler({ requestHandler, userBuilder: users }),
    );
  }
  close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await limiter.close();
  };
  return { url, executions };
}

/** A JSON-RPC call to `url`; `version` undefined sends no `A2A-Version` header (v0.3 style). */
async function call(
  url: string,
  method: string,
  messageId: string,
  version: string | undefined = '1.0',
): Promise<{
  body: { result?: unknown; error?: { code?: number; message?: string } };
  headers: Headers;
}> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(version === undefined ? {} : { 'a2a-version': version }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
    }),
  });
  return { body: (await res.json()) as never, headers: res.headers };
}

describe('shareUserBuilder', () => {
  async function countBuilds(mount: 'combined' | 'plain' | 'shared'): Promise<number> {
    let builds = 0;
    const authenticate: UserBuilder = async () => {
      builds++;
      return new UnauthenticatedUser();
    };
    const { url } = await startSdkAgent(mount, authenticate, 100);
    const { body, headers } = await call(url, 'SendMessage', 'm-1');
    expect(body.result).toBeDefined();
    expect(headers.get('ratelimit')).toContain('per-caller');
    await close?.();
    close = undefined;
    return builds;
  }

  it("runs the agent's builder once per request for the limiter and the SDK (twice without it)", async () => {
    expect(await countBuilds('shared')).toBe(1);
    expect(await countBuilds('plain')).toBe(2);
    expect(await countBuilds('combined')).toBe(1);
  });

  it("gives back the SDK's noAuthentication as it is", () => {
    expect(shareUserBuilder(UserBuilder.noAuthentication)).toBe(UserBuilder.noAuthentication);
  });
});

describe('rateLimitedJsonRpcHandler', () => {
  it('decides, answers through the SDK, and rejects with the SDK never reached', async () => {
    const { url, executions } = await startSdkAgent('combined', UserBuilder.noAuthentication, 1);
    const first = await call(url, 'SendMessage', 'm-1');
    expect(first.body.result).toBeDefined();
    expect(first.headers.get('ratelimit')).toBe('"per-caller";r=0;t=3600');
    const second = await call(url, 'SendMessage', 'm-2');
    expect(second.body.error?.code).toBe(-32603);
    expect(second.headers.get('retry-after')).toBe('3600');
    expect(executions()).toBe(1);
  });

  it('an error after an asynchronous identity is answered in JSON-RPC, not by the process or an HTML page', async () => {
    const skillFails = () => {
      throw new Error('skill lookup failed');
    };
    const { url, executions } = await startSdkAgent(
      'combined',
      async () => new UnauthenticatedUser(), // a Promise: the rest runs in its callback
      10,
      { skill: skillFails },
    );
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }),
    });
    // As the SDK answers an error of its own: HTTP 200, a JSON-RPC internal error, no stack.
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: unknown; error?: { code: number; message: string } };
    expect(body.id).toBe(1);
    expect(body.error?.code).toBe(-32603);
    expect(body.error?.message).toBe('skill lookup failed');
    expect(executions()).toBe(0);
  });

  it("follows the SDK's legacy mode: with it off, v0.3 names are the SDK's to refuse and are not charged", async () => {
    const { url } = await startSdkAgent('combined', UserBuilder.noAuthentication, 1);
    for (const id of ['v03-1', 'v03-2']) {
      const legacy = await call(url, 'message/send', id, undefined);
      expect(legacy.body.error?.code).toBe(-32601); // the SDK's "method not found"
      expect(legacy.headers.get('ratelimit')).toBeNull();
    }
    expect((await call(url, 'SendMessage', 'm-1')).body.result).toBeDefined();
  });
});
