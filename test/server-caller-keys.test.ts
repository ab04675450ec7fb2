/**
 * The default caller keys against the real SDK routers and grpc-js: an authenticated user can
 * never share the key of an anonymous address (whatever its name), IPv6 callers are keyed by
 * prefix (one host gets no fresh bucket per address of its /64), and an IPv4-mapped IPv6 socket
 * address is its IPv4 address — on Express and on gRPC.
 */

import type { AddressInfo } from 'node:net';
import { DefaultRequestHandler, InMemoryTaskStore, type User } from '@a2a-js/sdk/server';
import type { UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, grpcService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { createLimiter, type Limiter } from 'a2a-ratelimit/server';
import {
  type ExpressAdmissionOptions,
  rateLimitedJsonRpcHandler,
} from 'a2a-ratelimit/server/express';
import { grpcAdmissionInterceptor } from 'a2a-ratelimit/server/grpc';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { countingEchoExecutor } from './echo-executor.helpers.js';

/** The agent's card: its URLs are not used, its protocol version is. */
const KEYS_CARD = exampleAgentCard({
  name: 'keys',
  interfaces: [
    { url: 'http://127.0.0.1/rpc', protocolBinding: 'JSONRPC' },
    { url: '127.0.0.1:1', protocolBinding: 'GRPC' },
  ],
});

let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
});

/** One SendMessage per caller per hour; the callers the limiter saw, in order. */
function oneCallPerCaller(): { limiter: Limiter; callers: string[] } {
  const callers: string[] = [];
  const limiter = createLimiter({
    policies: [
      {
        name: 'per-caller',
        kind: 'rate',
        scope: 'caller',
        methods: ['SendMessage'],
        limit: 1,
        windowSeconds: 3600,
      },
    ],
    domain: 'agents.example.com',
    dedup: false,
    eventLoopDelay: false,
    observer: {
      admitted: (request) => callers.push(request.caller),
      rejected: (request) => callers.push(request.caller),
    },
  });
  closers.push(() => limiter.close());
  return { limiter, callers };
}

/** The agent's own authentication: `Authorization: Bearer <name>`, anyone else anonymous. */
function bearerUser(value: unknown): User {
  const text = Array.isArray(value) ? value[0] : value;
  const match = typeof text === 'string' ? /^Bearer (.+)$/.exec(text) : null;
  const name = match?.[1] ?? '';
  return { isAuthenticated: name !== '', userName: name };
}

const expressUsers: UserBuilder = async (req) => bearerUser(req.headers.authorization);

async function startExpress(
  host: string,
  admission: Omit<ExpressAdmissionOptions, 'userBuilder' | 'requestHandler'> = {},
): Promise<{ port: number; callers: string[] }> {
  const { limiter, callers } = oneCallPerCaller();
  const { executor } = countingEchoExecutor();
  const app = express();
  app.set('trust proxy', 'loopback');
  const requestHandler = new DefaultRequestHandler(KEYS_CARD, new InMemoryTaskStore(), executor);
  app.use(
    '/rpc',
    rateLimitedJsonRpcHandler(limiter, { requestHandler, userBuilder: expressUsers, admission }),
  );
  const server = app.listen(0, host);
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, callers };
}

interface Answer {
  outcome: 'admitted' | 'rejected';
  subject?: string;
}

async function send(
  url: string,
  headers: Record<string, string> = {},
  messageId = `m-${Math.random()}`,
): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
    }),
  });
  const body = (await res.json()) as {
    error?: { data?: { '@type'?: string; violations?: { subject?: string }[] }[] };
  };
  if (body.error === undefined) return { outcome: 'admitted' };
  const quota = body.error.data?.find((d) => d['@type']?.endsWith('QuotaFailure'));
  const subject = quota?.violations?.[0]?.subject;
  return subject === undefined ? { outcome: 'rejected' } : { outcome: 'rejected', subject };
}

const bearer = (name: string) => ({ authorization: `Bearer ${name}` });
const from = (address: string) => ({ 'x-forwarded-for': address });

describe('Express: caller namespaces', () => {
  it('a user named addr:127.0.0.1 does not share the anonymous bucket of 127.0.0.1', async () => {
    const { port, callers } = await startExpress('127.0.0.1');
    const url = `http://127.0.0.1:${port}/rpc`;
    expect((await send(url)).outcome).toBe('admitted');
    expect(await send(url)).toEqual({ outcome: 'rejected', subject: 'caller:addr:127.0.0.1' });
    expect((await send(url, bearer('addr:127.0.0.1'))).outcome).toBe('admitted');
    expect(await send(url, bearer('addr:127.0.0.1'))).toEqual({
      outcome: 'rejected',
      subject: 'caller:user:addr:127.0.0.1',
    });
    // Ordinary names stay readable on the wire.
    expect((await send(url, bearer('alice'))).outcome).toBe('admitted');
    expect(await send(url, bearer('alice'))).toEqual({
      outcome: 'rejected',
      subject: 'caller:alice',
    });
    expect(callers).toEqual([
      'addr:127.0.0.1',
      'addr:127.0.0.1',
      'user:addr:127.0.0.1',
      'user:addr:127.0.0.1',
      'alice',
      'alice',
    ]);
  });

  it('a user named like an IPv6 prefix key does not share it either', async () => {
    const { port } = await startExpress('127.0.0.1');
    const url = `http://127.0.0.1:${port}/rpc`;
    expect((await send(url, from('2001:db8::1'))).outcome).toBe('admitted');
    expect((await send(url, bearer('addr:2001:db8::/64'))).outcome).toBe('admitted');
    expect((await send(url, bearer('user:addr:2001:db8::/64'))).outcome).toBe('admitted');
  });
});

describe('Express: addresses', () => {
  it('IPv6 callers are keyed by /64; an IPv4-mapped address is its IPv4 address', async () => {
    const { port, callers } = await startExpress('127.0.0.1');
    const url = `http://127.0.0.1:${port}/rpc`;
    expect((await send(url, from('2001:db8:1:2::1'))).outcome).toBe('admitted');
    // Another address of the same /64, spelled another way: the same bucket.
    expect(await send(url, from('2001:DB8:1:2:ffff:0:0:9'))).toEqual({
      outcome: 'rejected',
      subject: 'caller:addr:2001:db8:1:2::/64',
    });
    expect((await send(url, from('2001:db8:1:3::1'))).outcome).toBe('admitted');
    expect((await send(url, from('203.0.113.5'))).outcome).toBe('admitted');
    expect(await send(url, from('::ffff:203.0.113.5'))).toEqual({
      outcome: 'rejected',
      subject: 'caller:addr:203.0.113.5',
    });
    expect(callers).toEqual([
      'addr:2001:db8:1:2::/64',
      'addr:2001:db8:1:2::/64',
      'addr:2001:db8:1:3::/64',
      'addr:203.0.113.5',
      'addr:203.0.113.5',
    ]);
  });

  it('ipv6PrefixLength: 56 aggregates a /56', async () => {
    const { port } = await startExpress('127.0.0.1', { ipv6PrefixLength: 56 });
    const url = `http://127.0.0.1:${port}/rpc`;
    expect((await send(url, from('2001:db8:1:200::1'))).outcome).toBe('admitted');
    expect(await send(url, from('2001:db8:1:2ff::1'))).toEqual({
      outcome: 'rejected',
      subject: 'caller:addr:2001:db8:1:200::/56',
    });
    expect((await send(url, from('2001:db8:1:300::1'))).outcome).toBe('admitted');
  });

  it('a bad ipv6PrefixLength fails at construction', () => {
    const { limiter } = oneCallPerCaller();
    expect(() =>
      rateLimitedJsonRpcHandler(limiter, {
        requestHandler: new DefaultRequestHandler(
          KEYS_CARD,
          new InMemoryTaskStore(),
          countingEchoExecutor().executor,
        ),
        userBuilder: expressUsers,
        admission: { ipv6PrefixLength: 0 },
      }),
    ).toThrow(/ipv6PrefixLength must be an integer from 1 to 128, got 0/);
  });

  it('a dual-stack server sees 127.0.0.1 as ::ffff:127.0.0.1 and keys it as 127.0.0.1', async () => {
    const { port, callers } = await startExpress('::');
    expect((await send(`http://127.0.0.1:${port}/rpc`)).outcome).toBe('admitted');
    expect((await send(`http://[::1]:${port}/rpc`)).outcome).toBe('admitted');
    expect((await send(`http://[::1]:${port}/rpc`)).outcome).toBe('rejected');
    expect(callers).toEqual(['addr:127.0.0.1', 'addr:::/64', 'addr:::/64']);
  });
});

describe('gRPC: caller keys', () => {
  async function startGrpc(): Promise<{ port: number; callers: string[] }> {
    const { limiter, callers } = oneCallPerCaller();
    const { executor } = countingEchoExecutor();
    const requestHandler = new DefaultRequestHandler(KEYS_CARD, new InMemoryTaskStore(), executor);
    const userBuilder = async (call: { metadata: grpc.Metadata }) =>
      bearerUser(call.metadata.get('authorization')[0]);
    const server = new grpc.Server({
      interceptors: [
        grpcAdmissionInterceptor(limiter, { userBuilder: userBuilder as never, requestHandler }),
      ],
    });
    server.addService(
      A2AService,
      grpcService({ requestHandler, userBuilder: userBuilder as never }),
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('[::]:0', grpc.ServerCredentials.createInsecure(), (error, p) =>
        error ? reject(error) : resolve(p),
      ),
    );
    closers.push(async () => {
      server.forceShutdown();
    });
    return { port, callers };
  }

  const Client = grpc.makeGenericClientConstructor(A2AService, 'A2AService');

  async function call(target: string, name?: string): Promise<'admitted' | grpc.status> {
    const client = new Client(
      target,
      grpc.credentials.createInsecure(),
    ) as unknown as grpc.Client & {
      sendMessage: (
        request: unknown,
        metadata: grpc.Metadata,
        callback: (error: grpc.ServiceError | null) => void,
      ) => void;
    };
    const metadata = new grpc.Metadata();
    metadata.set('a2a-version', '1.0');
    if (name !== undefined) metadata.set('authorization', `Bearer ${name}`);
    try {
      return await new Promise((resolve) => {
        client.sendMessage(
          { tenant: '', message: textMessage({ messageId: `m-${Math.random()}`, text: 'hi' }) },
          metadata,
          (error: grpc.ServiceError | null) => resolve(error === null ? 'admitted' : error.code),
        );
      });
    } finally {
      client.close();
    }
  }

  it('keys the peer by address (mapped IPv4 as IPv4, IPv6 by /64); users never share them', async () => {
    const { port, callers } = await startGrpc();
    expect(await call(`127.0.0.1:${port}`)).toBe('admitted');
    expect(await call(`127.0.0.1:${port}`)).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(await call(`127.0.0.1:${port}`, 'addr:127.0.0.1')).toBe('admitted');
    expect(await call(`[::1]:${port}`)).toBe('admitted');
    expect(await call(`[::1]:${port}`, 'alice')).toBe('admitted');
    expect(callers).toEqual([
      'addr:127.0.0.1',
      'addr:127.0.0.1',
      'user:addr:127.0.0.1',
      'addr:::/64',
      'alice',
    ]);
  });
});
