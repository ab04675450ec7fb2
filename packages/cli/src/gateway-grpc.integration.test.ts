/**
 * gRPC through the gateway, unary: the SDK's gRPC agent (no limiter of ours) behind the gateway's
 * HTTP/2 listener. Calls are relayed byte for byte with their credentials; the card's gRPC
 * interface names the gateway; other paths are UNIMPLEMENTED and never reach the agent; a
 * rejection is the in-process one (RESOURCE_EXHAUSTED with `grpc-status-details-bin` ErrorInfo +
 * RetryInfo + QuotaFailure, `grpc-retry-pushback-ms`, `retry-after`, `ratelimit`) read by a raw
 * grpc-js client, the SDK's gRPC client and our retrying client; a spent caller makes the agent
 * run nothing; an agent that cannot be reached is UNAVAILABLE with AGENT_UNAVAILABLE.
 */

import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { fileURLToPath } from 'node:url';
import type { AgentCard } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { RatePolicy } from 'a2a-ratelimit';
import { decodeStatus } from 'a2a-ratelimit';
import { createRetryInterceptor } from 'a2a-ratelimit/client/grpc';
import { textMessage } from 'a2a-ratelimit/testing';
import {
  createIdentityResolver,
  type GatewayRefusal,
  identifyWith,
  parseIdentityConfig,
} from 'a2a-ratelimit-gateway';
import protobuf from 'protobufjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type GrpcTestGateway,
  type GrpcTestUpstream,
  rawClient,
  rawUnary,
  sendRequestBytes,
  startGrpcGateway,
  startSdkGrpcUpstream,
} from '../../../test/gateway-grpc.helpers.js';
import { decodeGrpcRejection } from '../../../test/rejection-wire.helpers.js';
import { gatewayBanner, parseGatewayOptions, startGateway } from './gateway-command.js';

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const perCaller = (burst: number): RatePolicy => ({
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  limit: 60,
  windowSeconds: 60,
  burst,
});

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(burst = 2): Promise<{
  upstream: GrpcTestUpstream;
  gw: GrpcTestGateway;
  client: grpc.Client;
  refusals: GatewayRefusal[];
}> {
  const upstream = await startSdkGrpcUpstream();
  closers.push(upstream.close);
  const refusals: GatewayRefusal[] = [];
  const gw = await startGrpcGateway(upstream.baseUrl, {
    policies: [perCaller(burst)],
    gateway: { onRefusal: (r) => refusals.push(r) },
  });
  closers.push(gw.close);
  const client = rawClient(gw.grpcTarget);
  closers.push(() => client.close());
  return { upstream, gw, client, refusals };
}

function bearer(token: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('a2a-version', '1.0');
  md.set('authorization', `Bearer ${token}`);
  return md;
}

/** protobufjs over the official google.rpc definitions: an independent decoder. */
function officialSchema(): protobuf.Root {
  const root = new protobuf.Root();
  for (const file of [
    'google/protobuf/any.proto',
    'google/protobuf/duration.proto',
    'google/rpc/status.proto',
    'google/rpc/error_details.proto',
  ]) {
    const url = new URL(`../../../test/fixtures/protos/${file}`, import.meta.url);
    protobuf.parse(readFileSync(fileURLToPath(url), 'utf8'), root, { keepCase: false });
  }
  root.resolveAll();
  return root;
}

/** One raw HTTP/2 call to `target` writing `chunks` as they are (no gRPC library framing checks). */
async function rawCall(
  target: string,
  chunks: readonly Buffer[],
  gapMs = 0,
): Promise<{ status: string | undefined; message: string | undefined }> {
  const session = http2.connect(`http://${target}`);
  try {
    const req = session.request({
      ':method': 'POST',
      ':path': SEND,
      'content-type': 'application/grpc',
      te: 'trailers',
      'a2a-version': '1.0',
      authorization: 'Bearer mallory',
    });
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => {
      req.on('response', (headers) => {
        if (headers['grpc-status'] !== undefined) resolve(headers);
      });
      req.on('trailers', (headers) => resolve(headers));
      req.on('close', () => resolve({}));
    });
    req.on('data', () => undefined);
    req.on('error', () => undefined);
    for (const [i, chunk] of chunks.entries()) {
      if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      req.write(chunk);
    }
    req.end();
    const t = await trailers;
    const status = t['grpc-status'];
    const message = t['grpc-message'];
    return {
      status: typeof status === 'string' ? status : undefined,
      message: typeof message === 'string' ? decodeURIComponent(message) : undefined,
    };
  } finally {
    session.close();
  }
}

/** A gRPC length-prefixed frame around `message`. */
function frameOf(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

describe('gRPC through the gateway: one decided message per call (attack)', () => {
  it('a second SendMessage in the same call never reaches the agent, sent together or later', async () => {
    const { upstream, gw } = await setup();
    const together = await rawCall(gw.grpcTarget, [
      Buffer.concat([frameOf(sendRequestBytes('x-1')), frameOf(sendRequestBytes('x-2'))]),
    ]);
    expect(together.status).toBe(String(grpc.status.INVALID_ARGUMENT));
    // Nothing was decided nor forwarded.
    expect(upstream.calls).toEqual([]);
    // Sent later: the decided message goes alone and the agent's side is ended with it.
    await rawCall(
      gw.grpcTarget,
      [frameOf(sendRequestBytes('y-1')), frameOf(sendRequestBytes('y-2'))],
      300,
    );
    await new Promise((r) => setTimeout(r, 200));
    // The decided message may have run; the second never reached the agent.
    expect(upstream.executions.has('y-2')).toBe(false);
    expect(upstream.executions.get('y-1') ?? 0).toBeLessThanOrEqual(1);
    expect(upstream.calls).toEqual(['SendMessage']);
  });
});

describe('gRPC through the gateway (upstream: SDK)', () => {
  it('relays a unary call with its credentials, and serves the card with the gateway’s gRPC target', async () => {
    const { upstream, gw, client } = await setup();
    const { answer, error } = await rawUnary(
      client,
      SEND,
      sendRequestBytes('m-1'),
      bearer('alice'),
    );
    expect(error).toBeUndefined();
    const decoded = A2AService.sendMessage.responseDeserialize(answer as Buffer) as {
      payload?: { $case: string; value: { messageId: string } };
    };
    expect(decoded.payload?.$case).toBe('message');
    expect(decoded.payload?.value.messageId).toBe('r-m-1');
    expect(upstream.calls).toEqual(['SendMessage']);
    expect(upstream.authorizations).toEqual(['Bearer alice']);
    expect(upstream.executions.get('m-1')).toBe(1);
    const card = (await (await fetch(`${gw.baseUrl}/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { url: string; protocolBinding: string }[];
    };
    expect(card.supportedInterfaces.find((i) => i.protocolBinding === 'GRPC')?.url).toBe(
      gw.grpcTarget,
    );
  });

  it('answers UNIMPLEMENTED to a path outside lf.a2a.v1.A2AService; the agent sees nothing', async () => {
    const { upstream, client } = await setup();
    for (const path of [
      '/lf.a2a.v1.A2AService/Nope',
      '/other.Service/SendMessage',
      '/lf.a2a.v1.A2AService/sendmessage',
    ]) {
      const { error } = await rawUnary(client, path, sendRequestBytes('m-x'), bearer('x'));
      expect(error?.code).toBe(grpc.status.UNIMPLEMENTED);
    }
    expect(upstream.calls).toEqual([]);
  });

  it('a rejection read by grpc-js: RESOURCE_EXHAUSTED, grpc-status-details-bin ErrorInfo + RetryInfo + QuotaFailure; the agent runs nothing', async () => {
    const { upstream, client } = await setup(2);
    for (const id of ['a', 'b']) {
      expect(
        (await rawUnary(client, SEND, sendRequestBytes(id), bearer('bob'))).error,
      ).toBeUndefined();
    }
    const { error } = await rawUnary(client, SEND, sendRequestBytes('c'), bearer('bob'));
    expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    const md = error?.metadata as grpc.Metadata;
    expect(md.get('grpc-retry-pushback-ms')).toEqual(['1000']);
    expect(md.get('retry-after')).toEqual(['1']);
    expect(String(md.get('ratelimit')[0])).toMatch(/^"per-caller";r=0;t=1$/);
    const [bin] = md.get('grpc-status-details-bin') as Buffer[];
    const schema = officialSchema();
    const status = schema.lookupType('google.rpc.Status').decode(bin as Buffer) as unknown as {
      code: number;
      details: { typeUrl: string; value: Uint8Array }[];
    };
    expect(status.code).toBe(8);
    const byType = Object.fromEntries(
      status.details.map((any) => {
        const name = any.typeUrl.split('/').pop() as string;
        const type = schema.lookupType(name);
        return [name, type.toObject(type.decode(any.value), { longs: String })];
      }),
    );
    expect(Object.keys(byType).sort()).toEqual([
      'google.rpc.ErrorInfo',
      'google.rpc.QuotaFailure',
      'google.rpc.RetryInfo',
    ]);
    expect(byType['google.rpc.ErrorInfo']).toMatchObject({
      reason: 'RATE_LIMIT_EXCEEDED',
      domain: 'gateway.example.com',
    });
    expect(byType['google.rpc.RetryInfo']).toEqual({ retryDelay: { seconds: '1' } });
    // Our own decoder reads the same.
    expect(
      decodeGrpcRejection(error?.code ?? 0, error?.details ?? '', md.getMap())?.delaySeconds,
    ).toBe(1);
    // The refused call never reached the agent.
    expect(upstream.calls).toHaveLength(2);
    expect(upstream.executions.has('c')).toBe(false);
  });

  it('a rejection read by the SDK’s gRPC client, and by ours (which waits and gets through)', async () => {
    const { upstream, gw, refusals } = await setup(1);
    const card = (await (
      await fetch(`${gw.baseUrl}/.well-known/agent-card.json`)
    ).json()) as AgentCard;
    const sdkFactory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new GrpcTransportFactory()],
        preferredTransports: ['GRPC'],
      }),
    );
    const sdk = await sdkFactory.createFromAgentCard(card);
    await sdk.sendMessage({ message: textMessage({ messageId: 's-1', text: 'hi' }) } as never);
    const refused = await sdk
      .sendMessage({ message: textMessage({ messageId: 's-2', text: 'hi' }) } as never)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(refused).toBeDefined();
    expect(String((refused as Error).message)).toMatch(/RESOURCE_EXHAUSTED|rate limit|per-caller/i);
    expect(upstream.executions.has('s-2')).toBe(false);

    // Our client under the SDK's: it reads the rejection, waits the delay it says, and gets
    // through on its retry; the agent runs the message once.
    const before = refusals.length;
    const ours = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [
          new GrpcTransportFactory({
            grpcCallOptions: { interceptors: [createRetryInterceptor({ agent: gw.grpcTarget })] },
          }),
        ],
        preferredTransports: ['GRPC'],
      }),
    ).createFromAgentCard(card);
    await ours.sendMessage({ message: textMessage({ messageId: 's-3', text: 'hi' }) } as never);
    expect(refusals.length - before).toBe(1);
    expect(refusals.at(-1)).toMatchObject({ binding: 'grpc', status: 429, policy: 'per-caller' });
    expect(upstream.executions.get('s-3')).toBe(1);
  });

  it('an agent that cannot be reached: UNAVAILABLE with AGENT_UNAVAILABLE, retry-after', async () => {
    const upstream = await startSdkGrpcUpstream();
    closers.push(upstream.close);
    const gw = await startGrpcGateway(upstream.baseUrl, {
      policies: [perCaller(5)],
      gateway: { upstreamGrpc: '127.0.0.1:1' },
    });
    closers.push(gw.close);
    const client = rawClient(gw.grpcTarget);
    closers.push(() => client.close());
    const { error } = await rawUnary(client, SEND, sendRequestBytes('u-1'));
    expect(error?.code).toBe(grpc.status.UNAVAILABLE);
    const md = error?.metadata as grpc.Metadata;
    expect(md.get('retry-after')).toEqual(['1']);
    const decoded = decodeGrpcRejection(error?.code ?? 0, error?.details ?? '', md.getMap());
    expect(decoded?.reason).toBe('AGENT_UNAVAILABLE');
  });

  it('refuses a first message over 1 MiB with RESOURCE_EXHAUSTED before reading it; the agent sees nothing', async () => {
    const { upstream, client } = await setup();
    const { error } = await rawUnary(client, SEND, sendRequestBytes('big', 'x'.repeat(1_100_000)));
    expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(error?.details).toMatch(/message too large/);
    expect(upstream.calls).toEqual([]);
  });

  it('the command: --grpc-port relays gRPC, advertises it on the card and in its banner; bad flags are named', async () => {
    const upstream = await startSdkGrpcUpstream();
    closers.push(upstream.close);
    const options = parseGatewayOptions({ upstream: upstream.baseUrl, port: '0', grpcPort: '0' });
    const running = await startGateway(options, undefined, () => undefined);
    closers.push(async () => void (await running.stop(1000)));
    const target = running.grpcTarget as string;
    expect(target).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(gatewayBanner(running, options)).toContain(`gRPC        ${target}`);
    const card = (await (await fetch(`${running.url}/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { url: string; protocolBinding: string }[];
    };
    expect(card.supportedInterfaces.find((i) => i.protocolBinding === 'GRPC')?.url).toBe(target);
    const client = rawClient(target);
    closers.push(() => client.close());
    const { error } = await rawUnary(client, SEND, sendRequestBytes('cli-1'), bearer('ivy'));
    expect(error).toBeUndefined();
    expect(upstream.executions.get('cli-1')).toBe(1);
    expect(() =>
      parseGatewayOptions({ upstream: upstream.baseUrl, upstreamGrpc: '127.0.0.1:1' }),
    ).toThrow('--upstream-grpc needs --grpc-port <port>');
    expect(() =>
      parseGatewayOptions({ upstream: upstream.baseUrl, grpcPort: '0', upstreamGrpc: 'nope' }),
    ).toThrow(/--upstream-grpc must be host:port/);
  });

  it('identity: an API key is its caller, credentials reach the agent unchanged; an unknown key is UNAUTHENTICATED', async () => {
    const upstream = await startSdkGrpcUpstream();
    closers.push(upstream.close);
    const key = 'a-key-of-16-or-more-chars';
    const resolver = await createIdentityResolver(
      parseIdentityConfig({ apiKeys: [{ key, caller: 'orchestrator-7' }] }),
      { baseDir: process.cwd() },
    );
    closers.push(() => resolver.close());
    const refusals: GatewayRefusal[] = [];
    const gw = await startGrpcGateway(upstream.baseUrl, {
      policies: [perCaller(5)],
      gateway: { identify: identifyWith(() => resolver), onRefusal: (r) => refusals.push(r) },
    });
    closers.push(gw.close);
    const client = rawClient(gw.grpcTarget);
    closers.push(() => client.close());
    const ok = await rawUnary(client, SEND, sendRequestBytes('id-1'), bearer(key));
    expect(ok.error).toBeUndefined();
    expect(upstream.authorizations).toEqual([`Bearer ${key}`]);
    const { error } = await rawUnary(
      client,
      SEND,
      sendRequestBytes('id-2'),
      bearer('not-a-key-we-know-of'),
    );
    expect(error?.code).toBe(grpc.status.UNAUTHENTICATED);
    const [bin] = (error as grpc.ServiceError).metadata.get('grpc-status-details-bin');
    expect(decodeStatus(bin as Buffer).code).toBe(grpc.status.UNAUTHENTICATED);
    expect(refusals).toEqual([
      { caller: '', method: 'SendMessage', binding: 'grpc', status: 401, policy: 'identity' },
    ]);
    expect(upstream.calls).toEqual(['SendMessage']);
  });
});
