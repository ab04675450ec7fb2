/**
 * What a hostile caller's headers make of the request the agent sees: a method override is not
 * forwarded (the agent would run another route than the one decided), and the client address
 * the gateway saw is the last entry of `X-Forwarded-For` and `Forwarded` on HTTP and on gRPC
 * (an agent that believes its proxy's last entry is never handed the caller's own claim). The
 * agent is a raw recorder of what reaches it.
 */

import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, createServer as createHttp2Server, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { RatePolicy } from 'a2a-ratelimit';
import { exampleAgentCard } from 'a2a-ratelimit/testing';
import { createIdentityResolver, identifyWith, parseIdentityConfig } from 'a2a-ratelimit-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GrpcTestGateway,
  sendRequestBytes,
  startGrpcGateway,
} from './gateway-grpc.helpers.js';

const everything: RatePolicy = {
  name: 'everything',
  kind: 'rate',
  scope: 'caller',
  methods: ['GetTask', 'SendMessage'],
  limit: 100,
  windowSeconds: 3600,
  burst: 100,
};

/** An HTTP agent serving its card and answering `{}` to anything, recording each request. */
async function startHttpRecorder(): Promise<{
  baseUrl: string;
  seen: { method: string; url: string; headers: IncomingHttpHeaders }[];
  server: Server;
}> {
  const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
  let baseUrl = '';
  const server = createServer((req, res) => {
    req.resume();
    if (req.url === '/.well-known/agent-card.json') {
      const card = exampleAgentCard({
        name: 'recorder',
        interfaces: [{ url: `${baseUrl}/rest`, protocolBinding: 'HTTP+JSON' }],
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
      return;
    }
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'text/plain' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { baseUrl, seen, server };
}

/** A gRPC agent answering UNIMPLEMENTED, recording each call's headers. */
async function startGrpcRecorder(): Promise<{
  target: string;
  seen: IncomingHttpHeaders[];
  server: Http2Server;
}> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createHttp2Server();
  server.on('stream', (stream, headers) => {
    seen.push(headers);
    stream.resume();
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' },
      { endStream: true },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { target: `127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe('caller headers the agent would believe', () => {
  let http: Awaited<ReturnType<typeof startHttpRecorder>>;
  let grpc: Awaited<ReturnType<typeof startGrpcRecorder>>;
  let gw: GrpcTestGateway;
  beforeAll(async () => {
    http = await startHttpRecorder();
    grpc = await startGrpcRecorder();
    gw = await startGrpcGateway(http.baseUrl, {
      policies: [everything],
      gateway: { upstreamGrpc: grpc.target },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise<void>((resolve) => grpc?.server.close(() => resolve()));
    http?.server.closeAllConnections();
    await new Promise<void>((resolve) => http?.server.close(() => resolve()));
  });

  it('HTTP: no method override reaches the agent; the client address ends both forwarding headers', async () => {
    const r = await fetch(`${gw.baseUrl}/rest/tasks/t-1`, {
      headers: {
        'a2a-version': '1.0',
        'x-http-method-override': 'DELETE',
        'x-http-method': 'DELETE',
        'x-method-override': 'DELETE',
        'x-forwarded-for': '203.0.113.7',
        forwarded: 'for=203.0.113.7',
      },
    });
    expect(r.status).toBe(200);
    const seen = http.seen.at(-1);
    expect(seen?.method).toBe('GET');
    expect(seen?.url).toBe('/rest/tasks/t-1');
    const headers = seen?.headers ?? {};
    expect(headers['x-http-method-override']).toBeUndefined();
    expect(headers['x-http-method']).toBeUndefined();
    expect(headers['x-method-override']).toBeUndefined();
    expect(headers['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1');
    expect(headers.forwarded).toBe('for=203.0.113.7, for=127.0.0.1');
  });

  it('HTTP: the agent is asked for answers the gateway can read (no content coding)', async () => {
    // A compressed answer is bytes the gateway cannot read for task states and usage reports:
    // a caller asking for one would run tasks whose reports are never charged.
    await fetch(`${gw.baseUrl}/rest/tasks/t-2`, {
      headers: { 'a2a-version': '1.0', 'accept-encoding': 'gzip, br' },
    });
    expect(http.seen.at(-1)?.headers['accept-encoding']).toBe('identity');
  });

  it('gRPC: the agent may compress answers only in a coding both the gateway and the caller read', async () => {
    const body = sendRequestBytes('enc-1');
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);
    const call = (acceptEncoding: string) =>
      new Promise<void>((resolve) => {
        const session = connect(`http://${gw.grpcTarget}`);
        const stream = session.request({
          ':method': 'POST',
          ':path': '/lf.a2a.v1.A2AService/SendMessage',
          'content-type': 'application/grpc',
          te: 'trailers',
          'grpc-accept-encoding': acceptEncoding,
        });
        stream.resume();
        stream.on('close', () => {
          session.close();
          resolve();
        });
        stream.end(frame);
      });
    await call('zstd, gzip ,snappy');
    expect(grpc.seen.at(-1)?.['grpc-accept-encoding']).toBe('gzip');
    await call('zstd');
    expect(grpc.seen.at(-1)?.['grpc-accept-encoding']).toBeUndefined();
  });

  it('gRPC: the client address ends both forwarding headers', async () => {
    const body = sendRequestBytes('fwd-1');
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);
    const session = connect(`http://${gw.grpcTarget}`);
    await new Promise<void>((resolve) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/lf.a2a.v1.A2AService/SendMessage',
        'content-type': 'application/grpc',
        te: 'trailers',
        'x-forwarded-for': '203.0.113.7',
        forwarded: 'for=203.0.113.7',
      });
      stream.resume();
      stream.on('close', () => resolve());
      stream.end(frame);
    });
    session.close();
    const headers = grpc.seen.at(-1) ?? {};
    expect(headers['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1');
    expect(headers.forwarded).toBe('for=203.0.113.7, for=127.0.0.1');
  });
});

describe('a trusted identity header sent from outside its trusted sources', () => {
  /** A gateway believing `x-user` / `x-tier` from `fromCidrs` only. */
  async function gatewayTrusting(fromCidrs: string[]) {
    const http = await startHttpRecorder();
    const grpc = await startGrpcRecorder();
    const resolver = await createIdentityResolver(
      parseIdentityConfig({ trustedHeader: { name: 'X-User', tierName: 'x-tier', fromCidrs } }),
    );
    const gw = await startGrpcGateway(http.baseUrl, {
      policies: [everything],
      gateway: { upstreamGrpc: grpc.target, identify: identifyWith(() => resolver) },
    });
    const close = async () => {
      await gw.close();
      await new Promise<void>((resolve) => grpc.server.close(() => resolve()));
      http.server.closeAllConnections();
      await new Promise<void>((resolve) => http.server.close(() => resolve()));
    };
    return { http, grpc, gw, close };
  }
  const claims = { 'x-user': 'admin', 'x-tier': 'enterprise' };

  it('is not forwarded to the agent (HTTP and gRPC); from a trusted source it is', async () => {
    const outside = await gatewayTrusting(['10.0.0.0/8']);
    try {
      const r = await fetch(`${outside.gw.baseUrl}/rest/tasks/t-1`, {
        headers: { 'a2a-version': '1.0', ...claims },
      });
      expect(r.status).toBe(200);
      const headers = outside.http.seen.at(-1)?.headers ?? {};
      expect(headers['x-user']).toBeUndefined();
      expect(headers['x-tier']).toBeUndefined();
      const body = sendRequestBytes('claim-1');
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      frame.set(body, 5);
      const session = connect(`http://${outside.gw.grpcTarget}`);
      await new Promise<void>((resolve) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/lf.a2a.v1.A2AService/SendMessage',
          'content-type': 'application/grpc',
          te: 'trailers',
          ...claims,
        });
        stream.resume();
        stream.on('close', () => resolve());
        stream.end(frame);
      });
      session.close();
      const grpcHeaders = outside.grpc.seen.at(-1) ?? {};
      expect(grpcHeaders['x-user']).toBeUndefined();
      expect(grpcHeaders['x-tier']).toBeUndefined();
    } finally {
      await outside.close();
    }
    const inside = await gatewayTrusting(['127.0.0.0/8']);
    try {
      await fetch(`${inside.gw.baseUrl}/rest/tasks/t-1`, {
        headers: { 'a2a-version': '1.0', ...claims },
      });
      const headers = inside.http.seen.at(-1)?.headers ?? {};
      expect(headers['x-user']).toBe('admin');
      expect(headers['x-tier']).toBe('enterprise');
    } finally {
      await inside.close();
    }
  });
});
