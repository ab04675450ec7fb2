/**
 * A refused request is cheap whatever its body (issue 24): on JSON-RPC and REST a spent caller's
 * body is decided on a scan and never parsed (a body malformed past its messageId still gets the
 * 429, where an admitted caller's gets the parse error), a body nested deeper than the bound is
 * refused with the binding's JSON error (the plain and the `express.json()` path alike); on gRPC
 * a spent caller's message is never decoded (a counting deserializer) and one past the size bound
 * gets RESOURCE_EXHAUSTED "message too large", with no rate-limit details.
 */

import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, UserBuilder as GrpcUserBuilder } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { Policy } from 'a2a-ratelimit';
import { createLimiter, type Limiter } from 'a2a-ratelimit/server';
import { rateLimitedJsonRpcHandler, rateLimitedRestHandler } from 'a2a-ratelimit/server/express';
import {
  grpcAdmissionInterceptor,
  rateLimitedGrpcService,
  rateLimitedServiceDefinition,
} from 'a2a-ratelimit/server/grpc';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countingEchoExecutor } from './echo-executor.helpers.js';

const policies: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage', 'SendStreamingMessage'],
    limit: 1,
    windowSeconds: 3600,
    burst: 1,
  },
];

let limiter: Limiter;
let http: ReturnType<ReturnType<typeof express>['listen']>;
let grpcServer: grpc.Server;
let base: string;
let client: grpc.Client;
let decodes = 0;
let executions: () => number;
let callers = 0;

/** A caller with its one message of the hour left. */
const freshCaller = (): string => `caller-${++callers}`;

beforeAll(async () => {
  limiter = createLimiter({ policies, domain: 'agents.example.com', eventLoopDelay: false });
  const echo = countingEchoExecutor();
  executions = echo.executions;
  const card = exampleAgentCard({
    name: 'refusal-cost',
    interfaces: [
      { url: 'http://127.0.0.1/a2a/jsonrpc', protocolBinding: 'JSONRPC' },
      { url: '127.0.0.1:0', protocolBinding: 'GRPC' },
    ],
  });
  const requestHandler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    echo.executor,
    limiter.trackTasks(new (await import('@a2a-js/sdk/server')).DefaultExecutionEventBusManager()),
  );
  const callerOf = (value: unknown): string => (typeof value === 'string' ? value : 'anonymous');
  const app = express();
  const sdk = { requestHandler, userBuilder: UserBuilder.noAuthentication };
  app.use(
    '/a2a/jsonrpc',
    rateLimitedJsonRpcHandler(limiter, {
      ...sdk,
      admission: { identify: (req) => callerOf(req.headers['x-caller']) },
    }),
  );
  app.use(
    '/a2a/jsonrpc-shallow',
    rateLimitedJsonRpcHandler(limiter, {
      ...sdk,
      admission: { identify: (req) => callerOf(req.headers['x-caller']), maxJsonDepth: 8 },
    }),
  );
  app.use(
    '/a2a/rest',
    rateLimitedRestHandler(limiter, {
      ...sdk,
      admission: { identify: (req) => callerOf(req.headers['x-caller']) },
    }),
  );
  http = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => http.once('listening', () => resolve()));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  const counted = {
    ...A2AService,
    sendMessage: {
      ...A2AService.sendMessage,
      requestDeserialize: (bytes: Buffer) => {
        decodes++;
        return A2AService.sendMessage.requestDeserialize(bytes);
      },
    },
  };
  grpcServer = new grpc.Server({
    interceptors: [
      grpcAdmissionInterceptor(limiter, {
        identify: (md) => callerOf(md.get('x-caller')[0]),
        requestHandler,
      }),
    ],
  });
  grpcServer.addService(
    rateLimitedServiceDefinition(counted, { maxMessageBytes: 64 * 1024 }),
    rateLimitedGrpcService({ requestHandler, userBuilder: GrpcUserBuilder.noAuthentication }),
  );
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, p) =>
      error ? reject(error) : resolve(p),
    ),
  );
  client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client.close();
  grpcServer.forceShutdown();
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
  await limiter.close();
});

const message = (messageId: string, metadata = '{}'): string =>
  `{"messageId":"${messageId}","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":${metadata}}`;
const jsonRpcBody = (messageId: string, metadata?: string): string =>
  `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":${message(messageId, metadata)}}}`;
const restBody = (messageId: string, metadata?: string): string =>
  `{"message":${message(messageId, metadata)}}`;
/** Valid up to the messageId, malformed after it (a number JSON.parse refuses). */
const MALFORMED_AFTER_ID = '{"a":01x,"b":[1,2]}';
/** A `metadata` Struct (field 4) whose one entry claims 127 bytes it does not have. */
const UNDECODABLE_METADATA = Buffer.from([0x22, 0x02, 0x0a, 0x7f]);
const nested = (levels: number): string => `{"d":${'['.repeat(levels)}${']'.repeat(levels)}}`;

/** What the answers carry, as far as these tests read them. */
interface AnswerBody {
  readonly id?: unknown;
  readonly result?: unknown;
  readonly error: {
    readonly code?: number;
    readonly status?: string;
    readonly message?: string;
    readonly data: ReadonlyArray<{ readonly reason?: string }>;
  };
}

async function post(path: string, body: string, caller: string) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-caller': caller },
    body,
  });
  return { status: response.status, body: (await response.json()) as AnswerBody };
}

/** The same body sent chunked (no Content-Length): read by `express.json()`, not the plain reader. */
function postChunked(path: string, body: string, caller: string) {
  return new Promise<{ status: number; body: AnswerBody }>((resolve, reject) => {
    const req = httpRequest(
      `${base}${path}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-caller': caller },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    const half = body.length >> 1;
    req.write(body.slice(0, half));
    req.end(body.slice(half));
  });
}

/** Spends a fresh caller's one message on `binding`. */
async function spentCaller(): Promise<string> {
  const caller = freshCaller();
  const first = await post('/a2a/jsonrpc', jsonRpcBody(`${caller}-first`), caller);
  expect(first.body.result).toBeDefined();
  return caller;
}

describe('JSON-RPC', () => {
  it("a spent caller's body is refused with the rate limit before it is parsed", async () => {
    const caller = await spentCaller();
    const ran = executions();
    const refused = await post('/a2a/jsonrpc', jsonRpcBody('m-2', MALFORMED_AFTER_ID), caller);
    expect(refused.body.error.code).toBe(-32603);
    expect(refused.body.id).toBe(7);
    expect(refused.body.error.data[0]?.reason).toBe('RATE_LIMIT_EXCEEDED');
    // The same body from a caller with quota left is parsed once admitted: a parse error.
    const admitted = await post(
      '/a2a/jsonrpc',
      jsonRpcBody('m-3', MALFORMED_AFTER_ID),
      freshCaller(),
    );
    expect(admitted.body.error.code).toBe(-32700);
    // A large flat body: refused alike, and nothing ran.
    const flat = `{${Array.from({ length: 3000 }, (_, i) => `"k${i}":"v${i}"`).join(',')}}`;
    const large = await post('/a2a/jsonrpc', jsonRpcBody('m-4', flat), caller);
    expect(large.body.error.data[0]?.reason).toBe('RATE_LIMIT_EXCEEDED');
    expect(executions()).toBe(ran);
  });

  it('a body nested deeper than 64 levels is refused with -32600 before anything is decided', async () => {
    const caller = freshCaller();
    const deep = await post('/a2a/jsonrpc', jsonRpcBody('m-1', nested(49_000)), caller);
    expect(deep.status).toBe(200);
    expect(deep.body.error).toEqual({
      code: -32600,
      message: 'JSON nested deeper than 64 levels',
    });
    const chunked = await postChunked('/a2a/jsonrpc', jsonRpcBody('m-2', nested(100)), caller);
    expect(chunked.body.error.message).toBe('JSON nested deeper than 64 levels');
    // 64 levels in all (the body, params, message, metadata, d and 59 arrays) is accepted: the
    // caller's quota was untouched by the refusals.
    const deepest = await post('/a2a/jsonrpc', jsonRpcBody('m-3', nested(59)), caller);
    expect(deepest.body.result).toBeDefined();
  });

  it('maxJsonDepth sets the bound', async () => {
    const refused = await post(
      '/a2a/jsonrpc-shallow',
      jsonRpcBody('m-1', nested(5)),
      freshCaller(),
    );
    expect(refused.body.error).toEqual({
      code: -32600,
      message: 'JSON nested deeper than 8 levels',
    });
    const accepted = await post(
      '/a2a/jsonrpc-shallow',
      jsonRpcBody('m-2', nested(4)),
      freshCaller(),
    );
    expect(accepted.body.result).toBeDefined();
  });
});

describe('REST', () => {
  it("a spent caller's body is refused with 429 before it is parsed", async () => {
    const caller = await spentCaller();
    const refused = await post(
      '/a2a/rest/message:send',
      restBody('m-2', MALFORMED_AFTER_ID),
      caller,
    );
    expect(refused.status).toBe(429);
    expect(refused.body.error.status).toBe('RESOURCE_EXHAUSTED');
    const admitted = await post(
      '/a2a/rest/message:send',
      restBody('m-3', MALFORMED_AFTER_ID),
      freshCaller(),
    );
    expect(admitted.status).toBe(400);
    expect(admitted.body.error.message).toBe('Invalid JSON payload.');
  });

  it('a body nested deeper than 64 levels is a 400 INVALID_ARGUMENT, plain or chunked', async () => {
    for (const send of [post, postChunked]) {
      const deep = await send(
        '/a2a/rest/message:send',
        restBody('m-1', nested(49_000)),
        freshCaller(),
      );
      expect(deep.status).toBe(400);
      expect(deep.body.error).toMatchObject({
        code: 400,
        status: 'INVALID_ARGUMENT',
        message: 'JSON nested deeper than 64 levels',
      });
    }
  });
});

describe('gRPC', () => {
  function send(bytes: Buffer, caller: string) {
    const metadata = new grpc.Metadata();
    metadata.set('x-caller', caller);
    metadata.set('a2a-version', '1.0');
    return new Promise<{ error: grpc.ServiceError | null }>((resolve) => {
      client.makeUnaryRequest(
        '/lf.a2a.v1.A2AService/SendMessage',
        (b: Buffer) => b,
        (b: Buffer) => b,
        bytes,
        metadata,
        (error) => resolve({ error }),
      );
    });
  }
  const encode = (messageId: string, fields = 0): Buffer => {
    const metadata: Record<string, string> = {};
    for (let i = 0; i < fields; i++) metadata[`k${i}`] = `v${i}`;
    return A2AService.sendMessage.requestSerialize({
      tenant: '',
      message: textMessage({ messageId, text: 'hi' }),
      metadata,
    } as never);
  };

  it("a spent caller's message is refused with RESOURCE_EXHAUSTED and never decoded", async () => {
    const caller = freshCaller();
    const before = decodes;
    expect((await send(encode('m-1'), caller)).error).toBeNull();
    expect(decodes).toBe(before + 1);
    const refused = await send(encode('m-2', 3000), caller);
    expect(refused.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refused.error?.metadata.get('grpc-status-details-bin')).toHaveLength(1);
    expect(refused.error?.metadata.get('retry-after')).toHaveLength(1);
    expect(decodes).toBe(before + 1);
    // A request the decoder would refuse (its metadata Struct is cut short), from the spent
    // caller: refused with the rate limit, not a decoding error.
    const garbage = Buffer.concat([encode('m-3'), UNDECODABLE_METADATA]);
    expect((await send(garbage, caller)).error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(decodes).toBe(before + 1);
  });

  it('a message past the bound is RESOURCE_EXHAUSTED "message too large", no rate limit', async () => {
    const caller = freshCaller();
    const before = decodes;
    const ran = executions();
    const large = encode('m-1', 10_000);
    expect(large.length).toBeGreaterThan(64 * 1024);
    const { error } = await send(large, caller);
    expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(error?.details).toBe(`message too large: ${large.length} bytes, the limit is 65536`);
    expect(error?.metadata.get('grpc-status-details-bin')).toHaveLength(0);
    expect(error?.metadata.get('retry-after')).toHaveLength(0);
    expect(decodes).toBe(before);
    expect(executions()).toBe(ran);
    // Nothing was charged: the caller's one message is still there.
    expect((await send(encode('m-2'), caller)).error).toBeNull();
  });

  it('an admitted message the decoder refuses fails INTERNAL after the decision, and runs nothing', async () => {
    const ran = executions();
    const before = decodes;
    const caller = freshCaller();
    const first = await send(Buffer.concat([encode('m-1'), UNDECODABLE_METADATA]), caller);
    expect(first.error?.code).toBe(grpc.status.INTERNAL);
    expect(first.error?.details).toBe('Error deserializing request');
    expect(decodes).toBe(before + 1);
    // Decided (and charged) before it was decoded: the caller's one message is spent.
    expect((await send(encode('m-2'), caller)).error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // Bytes the scan cannot follow (a field cut short) are decoded first, as grpc-js would.
    const truncated = await send(
      Buffer.concat([encode('m-3'), Buffer.from([0x2a, 0x7f, 0x01])]),
      freshCaller(),
    );
    expect(truncated.error?.code).toBe(grpc.status.INTERNAL);
    expect(decodes).toBe(before + 2);
    expect(executions()).toBe(ran);
  });

  it('without the interceptor, a message left encoded runs nothing', async () => {
    const bareEcho = countingEchoExecutor();
    const bare = new grpc.Server();
    const card = exampleAgentCard({
      name: 'bare',
      interfaces: [{ url: '127.0.0.1:0', protocolBinding: 'GRPC' }],
    });
    const requestHandler = new DefaultRequestHandler(
      card,
      new InMemoryTaskStore(),
      bareEcho.executor,
    );
    bare.addService(
      rateLimitedServiceDefinition(A2AService),
      rateLimitedGrpcService({ requestHandler, userBuilder: GrpcUserBuilder.noAuthentication }),
    );
    const port = await new Promise<number>((resolve, reject) =>
      bare.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, p) =>
        error ? reject(error) : resolve(p),
      ),
    );
    const bareClient = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      const error = await new Promise<grpc.ServiceError | null>((resolve) => {
        const metadata = new grpc.Metadata();
        metadata.set('a2a-version', '1.0');
        bareClient.makeUnaryRequest(
          '/lf.a2a.v1.A2AService/SendMessage',
          (b: Buffer) => b,
          (b: Buffer) => b,
          encode('m-1'),
          metadata,
          (e) => resolve(e),
        );
      });
      // The SDK cannot read an encoded message as a request (UNKNOWN), and the guard would refuse
      // an undecided call anyway (INTERNAL): either way the call fails and nothing runs.
      expect([grpc.status.UNKNOWN, grpc.status.INTERNAL]).toContain(error?.code);
      expect(bareEcho.executions()).toBe(0);
    } finally {
      bareClient.close();
      bare.forceShutdown();
    }
  });
});
