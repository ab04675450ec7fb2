/**
 * Attack "keys that meet" (issue 24), through the public server path: a real SDK agent
 * (`DefaultRequestHandler`) behind `rateLimitedJsonRpcHandler`, JSON-RPC over loopback, on a
 * `MemoryStore` and on a `RedisStore` against the real Redis (own prefix). Each collision the
 * attack found is now two identities: both requests run. Each test also shows its policy biting
 * (a third request of an identity already spent is refused), so none passes with limits off.
 * Callers come from the request (an `identify` reading a JSON-encoded header), so NUL and lone
 * surrogates reach the caller as they would from any application's own identity.
 */

import type { AddressInfo } from 'node:net';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder } from '@a2a-js/sdk/server/express';
import type { Policy } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { createLimiter } from 'a2a-ratelimit/server';
import { rateLimitedJsonRpcHandler } from 'a2a-ratelimit/server/express';
import { exampleAgentCard } from 'a2a-ratelimit/testing';
import express from 'express';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countingEchoExecutor } from './echo-executor.helpers.js';
import {
  connectRedis,
  deletePrefix,
  probeRedis,
  REDIS_URL,
  requireOrSkip,
  runPrefix,
} from './fixtures/redis/redis-env.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const CARD = exampleAgentCard({
  name: 'keys-meet',
  interfaces: [{ url: 'http://127.0.0.1/rpc', protocolBinding: 'JSONRPC' }],
});

/** One SendMessage per hour under `scope`. */
const onePer = (scope: 'caller' | 'tenant' | 'caller+skill'): Policy => ({
  name: `one-per-${scope.replace('+', '-')}`,
  kind: 'rate',
  scope,
  methods: ['SendMessage'],
  limit: 1,
  windowSeconds: 3600,
});

/** A generous policy: deduplication is what is under test. */
const OPEN: Policy = { name: 'open', kind: 'rate', limit: 1000, windowSeconds: 1 };

interface Sent {
  readonly caller: string;
  readonly messageId: string;
  readonly tenant?: string;
  readonly skill?: string;
}

interface Agent {
  send(request: Sent): Promise<'ran' | 'rejected' | 'not run'>;
  executions(): number;
}

let client: Redis | undefined;
const prefix = runPrefix('keys-meet');
let closers: (() => Promise<void>)[] = [];
let seq = 0;

beforeAll(async () => {
  if (redisUp) client = await connectRedis();
});
afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
});
afterAll(async () => {
  if (client !== undefined) {
    await deletePrefix(client, prefix);
    client.disconnect();
  }
});

/** The agent on `store`; caller from `x-caller`, skill from `x-skill` (both JSON strings). */
async function startAgent(store: 'memory' | 'redis', policies: Policy[]): Promise<Agent> {
  seq++;
  const limiter = createLimiter({
    ...(store === 'memory'
      ? { policies }
      : {
          store: new RedisStore({
            client: client as Redis,
            policies,
            keyPrefix: `${prefix}${seq}:`,
            onError: 'fail-closed',
            // A loaded machine must not turn a slow answer into a refusal.
            timeoutMs: 10_000,
            logger: false,
          }),
        }),
    domain: 'agents.example.com',
    eventLoopDelay: false,
  });
  const { executor, executions } = countingEchoExecutor();
  const requestHandler = new DefaultRequestHandler(CARD, new InMemoryTaskStore(), executor);
  const header = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : undefined);
  const app = express();
  app.use(
    '/rpc',
    rateLimitedJsonRpcHandler(limiter, {
      requestHandler,
      userBuilder: UserBuilder.noAuthentication,
      admission: {
        identify: (req) => String(header(req.headers['x-caller'])),
        skill: (req) => header(req.headers['x-skill']),
      },
    }),
  );
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  closers.push(async () => {
    await limiter.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`;
  return {
    executions,
    async send(request) {
      const before = executions();
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'a2a-version': '1.0',
          // JSON.stringify writes a lone surrogate as \udXXX and NUL as \u0000: plain ASCII.
          'x-caller': JSON.stringify(request.caller),
          ...(request.skill === undefined ? {} : { 'x-skill': JSON.stringify(request.skill) }),
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: {
            message: {
              messageId: request.messageId,
              role: 'ROLE_USER',
              parts: [{ text: 'hi' }],
            },
            ...(request.tenant === undefined ? {} : { tenant: request.tenant }),
          },
        }),
      });
      const body = (await res.json()) as { result?: unknown; error?: { data?: unknown } };
      if (body.error !== undefined && JSON.stringify(body.error).includes('RATE_LIMIT')) {
        return 'rejected';
      }
      return executions() > before ? 'ran' : 'not run';
    },
  };
}

const STORES = redisUp ? (['memory', 'redis'] as const) : (['memory'] as const);

describe.each(STORES)('keys that meet, now apart (%s store)', (store) => {
  it('caller+skill: caller a/skill:b with skill c is not caller a with skill b/skill:c', async () => {
    const agent = await startAgent(store, [onePer('caller+skill')]);
    expect(await agent.send({ caller: 'a/skill:b', skill: 'c', messageId: 'm1' })).toBe('ran');
    expect(await agent.send({ caller: 'a', skill: 'b/skill:c', messageId: 'm2' })).toBe('ran');
    expect(await agent.send({ caller: 'a', skill: 'b/skill:c', messageId: 'm3' })).toBe('rejected');
    expect(agent.executions()).toBe(2);
  });

  it('deduplication: caller a\\0b with messageId c is not caller a with messageId b\\0c', async () => {
    const agent = await startAgent(store, [OPEN]);
    expect(await agent.send({ caller: 'a\u0000b', messageId: 'c' })).toBe('ran');
    expect(await agent.send({ caller: 'a', messageId: 'b\u0000c' })).toBe('ran');
    // A true copy is still a copy: it does not run again.
    expect(await agent.send({ caller: 'a', messageId: 'b\u0000c' })).toBe('not run');
    expect(agent.executions()).toBe(2);
  });

  it('lone surrogates: tenants x\\ud800 and x\\udc00 are two tenants', async () => {
    const agent = await startAgent(store, [onePer('tenant')]);
    expect(await agent.send({ caller: 'c', tenant: 'x\ud800', messageId: 'm1' })).toBe('ran');
    expect(await agent.send({ caller: 'c', tenant: 'x\udc00', messageId: 'm2' })).toBe('ran');
    expect(await agent.send({ caller: 'c', tenant: 'x\ud800', messageId: 'm3' })).toBe('rejected');
    expect(agent.executions()).toBe(2);
  });

  it('lone surrogates: messageIds x\\ud800 and x\\udc00 are two messages (the second runs)', async () => {
    const agent = await startAgent(store, [OPEN]);
    expect(await agent.send({ caller: 'c', messageId: 'x\ud800' })).toBe('ran');
    expect(await agent.send({ caller: 'c', messageId: 'x\udc00' })).toBe('ran');
    expect(await agent.send({ caller: 'c', messageId: 'x\ud800' })).toBe('not run');
    expect(agent.executions()).toBe(2);
  });

  it('lone surrogates: callers x\\ud800 and x\\udc00 are two callers', async () => {
    const agent = await startAgent(store, [onePer('caller')]);
    expect(await agent.send({ caller: 'x\ud800', messageId: 'm1' })).toBe('ran');
    expect(await agent.send({ caller: 'x\udc00', messageId: 'm2' })).toBe('ran');
    expect(await agent.send({ caller: 'x\udc00', messageId: 'm3' })).toBe('rejected');
    expect(agent.executions()).toBe(2);
  });

  it('no tenant is not the tenant "-"', async () => {
    const agent = await startAgent(store, [onePer('tenant')]);
    expect(await agent.send({ caller: 'c', messageId: 'm1' })).toBe('ran');
    expect(await agent.send({ caller: 'c', tenant: '-', messageId: 'm2' })).toBe('ran');
    expect(await agent.send({ caller: 'c', messageId: 'm3' })).toBe('rejected');
    expect(agent.executions()).toBe(2);
  });
});
