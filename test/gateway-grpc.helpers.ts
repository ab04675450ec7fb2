/**
 * gRPC gateway tests' parts: the SDK's agent with NO limiter of ours, served by the SDK's own
 * `grpcService` on a grpc-js server (plus its card and JSON-RPC on HTTP, so the gateway can fetch
 * the card and follow tasks), counting every gRPC call that reaches it, every execution and every
 * call it saw cancelled; the gateway engine in front of it with its HTTP/2 (h2c) gRPC listener on
 * 127.0.0.1; and raw request bytes encoded with the SDK's own service definition.
 */

import { createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import type { User } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, type UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, grpcService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { exampleAgentCard, textMessage } from 'a2a-ratelimit/testing';
import express from 'express';
import {
  type SdkUpstreamOptions,
  scriptedExecutor,
  startTestGateway,
  type TestGateway,
  upstreamRequestHandler,
} from './gateway.helpers.js';

/** The upstream as the gRPC tests see it. */
export interface GrpcTestUpstream {
  /** Its HTTP base URL (card, JSON-RPC). */
  readonly baseUrl: string;
  /** Its gRPC target, `127.0.0.1:port`. */
  readonly grpcTarget: string;
  /** gRPC calls that reached it, by rpc name (`SendMessage`, …), in order. */
  readonly calls: string[];
  /** gRPC calls it saw cancelled (the caller or the deadline), by rpc name. */
  readonly cancelled: string[];
  /** `authorization` metadata of each gRPC call, in order. */
  readonly authorizations: (string | undefined)[];
  /** Messages it ran, by messageId. */
  readonly executions: Map<string, number>;
  /** Completes every task held WORKING by a `hold` message. */
  releaseHeld(): void;
  /** Every gRPC call from now on is refused with this status (undefined: none is). */
  refuse(status: GrpcRefusal | undefined): void;
  close(): Promise<void>;
}

/** A status the upstream refuses every call with. */
export interface GrpcRefusal {
  readonly code: grpc.status;
  readonly details: string;
  /** Its trailing metadata (`-bin` keys take bytes). */
  readonly metadata: Readonly<Record<string, string | Buffer>>;
  /** Send (empty) headers first, so the status comes as trailers rather than Trailers-Only. */
  readonly headersFirst?: boolean;
}

/** Extensions the SDK upstream's extended card carries: one of its own, and a stale rate-limit one. */
export const UPSTREAM_EXTENSIONS = [
  { uri: 'https://example.test/ext/other/v1', description: 'kept as it is', params: { a: 1 } },
  { uri: 'https://a2a-ratelimit.dev/ext/rate-limits/v1', params: { stale: true } },
] as const;

function userFrom(value: unknown): User {
  const text = Array.isArray(value) ? value[0] : value;
  const match = typeof text === 'string' ? /^Bearer (.+)$/.exec(text) : null;
  const name = match?.[1] ?? '';
  return { isAuthenticated: name !== '', userName: name };
}

const RPC_NAMES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(A2AService).map(([key, def]) => [key, def.path.split('/').pop() as string]),
);

/**
 * The SDK's agent with no limiter, on gRPC. Message text: `hold` (a task WORKING until released
 * or cancelled), `task` (a task completed at once, its usage report as `options` say), anything
 * else a direct Message reply.
 */
export async function startSdkGrpcUpstream(
  options: SdkUpstreamOptions = {},
): Promise<GrpcTestUpstream> {
  const executions = new Map<string, number>();
  const held = new Map<string, (canceled: boolean) => void>();
  const calls: string[] = [];
  const cancelled: string[] = [];
  const authorizations: (string | undefined)[] = [];
  const grpcServer = new grpc.Server();
  const app = express();
  const httpServer = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => httpServer.once('listening', () => resolve()));
  const baseUrl = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  const grpcTarget = `127.0.0.1:${port}`;
  const baseCard = exampleAgentCard({
    name: 'upstream',
    interfaces: [
      { url: grpcTarget, protocolBinding: 'GRPC' },
      { url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC' },
    ],
  });
  const requestHandler = upstreamRequestHandler(
    baseCard,
    scriptedExecutor(executions, held, options),
    options.extendedCard === true,
    UPSTREAM_EXTENSIONS,
  );
  let refusal: GrpcRefusal | undefined;
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  const httpUser = (async (req: express.Request) =>
    userFrom(req.headers.authorization)) as unknown as typeof UserBuilder.noAuthentication;
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: httpUser }));
  const impl = grpcService({
    requestHandler,
    userBuilder: async (call) => userFrom(call.metadata.get('authorization')[0]?.toString()),
  }) as unknown as grpc.UntypedServiceImplementation;
  const counted: grpc.UntypedServiceImplementation = {};
  for (const [key, handler] of Object.entries(impl)) {
    const rpc = RPC_NAMES[key] ?? key;
    counted[key] = ((call: grpc.ServerUnaryCall<unknown, unknown>, callback?: unknown) => {
      calls.push(rpc);
      authorizations.push(call.metadata.get('authorization')[0]?.toString());
      call.on('cancelled', () => cancelled.push(rpc));
      if (refusal !== undefined) {
        const metadata = new grpc.Metadata();
        for (const [k, v] of Object.entries(refusal.metadata)) metadata.set(k, v);
        if (refusal.headersFirst === true) call.sendMetadata(new grpc.Metadata());
        const status = { code: refusal.code, details: refusal.details, metadata };
        if (typeof callback === 'function') (callback as (e: unknown) => void)(status);
        else (call as unknown as grpc.ServerWritableStream<unknown, unknown>).emit('error', status);
        return;
      }
      return (handler as (c: unknown, cb?: unknown) => unknown)(call, callback);
    }) as grpc.UntypedHandleCall;
  }
  grpcServer.addService(A2AService, counted);
  return {
    baseUrl,
    grpcTarget,
    calls,
    cancelled,
    authorizations,
    executions,
    refuse(status) {
      refusal = status;
    },
    releaseHeld() {
      for (const [id, resolve] of held) {
        held.delete(id);
        resolve(false);
      }
    },
    async close() {
      for (const [id, release] of held) {
        held.delete(id);
        release(true);
      }
      grpcServer.forceShutdown();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}

/** The gateway with its gRPC listener. */
export interface GrpcTestGateway extends TestGateway {
  /** The gateway's gRPC target, `127.0.0.1:port`. */
  readonly grpcTarget: string;
  readonly grpcServer: Http2Server;
}

/**
 * Starts the gateway engine in front of `upstream` with an h2c gRPC listener on 127.0.0.1.
 *
 * @example
 * ```ts
 * const gw = await startGrpcGateway(upstream.baseUrl, { policies: [perCaller] });
 * ```
 */
export async function startGrpcGateway(
  upstreamUrl: string,
  options: Parameters<typeof startTestGateway>[1],
): Promise<GrpcTestGateway> {
  let handler: TestGateway['gateway']['grpcHandler'] | undefined;
  const grpcServer = createServer();
  grpcServer.on('stream', (stream, headers) => handler?.(stream, headers));
  await new Promise<void>((resolve) => grpcServer.listen(0, '127.0.0.1', () => resolve()));
  const grpcTarget = `127.0.0.1:${(grpcServer.address() as AddressInfo).port}`;
  const gw = await startTestGateway(upstreamUrl, {
    ...options,
    gateway: { grpcPublicTarget: grpcTarget, ...options.gateway },
  });
  handler = gw.gateway.grpcHandler;
  const sessions = new Set<import('node:http2').ServerHttp2Session>();
  grpcServer.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    ...gw,
    grpcTarget,
    grpcServer,
    async close() {
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => grpcServer.close(() => resolve()));
      await gw.close();
    },
  };
}

/** A `SendMessageRequest`, encoded with the SDK's own service definition. */
export function sendRequestBytes(messageId: string, text = 'hi'): Buffer {
  return A2AService.sendMessage.requestSerialize({
    tenant: '',
    message: textMessage({ messageId, text }),
  } as never);
}

/** A raw grpc-js client to `target` (no interceptor of ours). */
export function rawClient(target: string): grpc.Client {
  return new grpc.Client(target, grpc.credentials.createInsecure());
}

/** A raw unary call: its status (and metadata), or its answer bytes. */
export function rawUnary(
  client: grpc.Client,
  path: string,
  body: Buffer,
  metadata = new grpc.Metadata(),
  options: grpc.CallOptions = {},
): Promise<{ error?: grpc.ServiceError; answer?: Buffer }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      body,
      metadata,
      options,
      (error, answer) => resolve(error ? { error } : { answer: answer as Buffer }),
    );
  });
}
