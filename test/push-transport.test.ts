/**
 * `createWebhookTransport` on loopback: every forbidden destination is refused before any
 * connection (the connector records every dial; non-loopback targets are recorded and answered
 * by a loopback stand-in, never dialled), names are resolved by an injected resolver and the
 * connection is pinned to the checked address (a re-resolution to a forbidden address is refused
 * for the next connection), redirects are not followed, bodies are bounded, TLS is checked against
 * the host name while connecting to the pinned address.
 */

import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, connect } from 'node:net';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { createWebhookTransport, type WebhookTransportOptions } from 'a2a-ratelimit/push';
import { afterEach, describe, expect, it } from 'vitest';

/** One address a name resolves to, as the transport's `resolve` option gives them. */
type ResolvedAddress = Awaited<ReturnType<NonNullable<WebhookTransportOptions['resolve']>>>[number];

/** Every reason the webhook policy refuses with (its refusals' `reason`). */
const WEBHOOK_REFUSAL_REASONS = [
  'invalid-url',
  'scheme',
  'credentials',
  'local-name',
  'address',
  'no-address',
];

/** Where the transport dials (the argument of its `connect` option). */
type WebhookConnectTarget = Parameters<NonNullable<WebhookTransportOptions['connect']>>[0];

const TLS_DIR = join(import.meta.dirname, 'fixtures', 'push-tls');
const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Seen {
  readonly host: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly servername?: string | false | undefined;
}

/** A loopback HTTP server that records what reached it and answers with `answer`. */
async function standIn(
  answer: (res: import('node:http').ServerResponse) => void = (res) => res.end('ok'),
  server: Server = createServer(),
): Promise<{ port: number; seen: Seen[]; connections: () => number }> {
  const seen: Seen[] = [];
  let connections = 0;
  server.on('connection', () => connections++);
  server.on('secureConnection', () => connections++);
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        host: req.headers.host,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        servername: (req.socket as TLSSocket & { servername?: string | false }).servername,
      });
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as AddressInfo).port, seen, connections: () => connections };
}

/**
 * A transport whose resolver answers from `names` and whose connector records each dial and
 * sends it to the loopback stand-in on `port` instead (so no packet leaves loopback).
 */
function recordingTransport(
  port: number,
  names: Record<string, readonly ResolvedAddress[] | (() => readonly ResolvedAddress[])> = {},
  options: WebhookTransportOptions = {},
) {
  const dialled: WebhookConnectTarget[] = [];
  const resolved: string[] = [];
  const transport = createWebhookTransport({
    resolve: async (hostname) => {
      resolved.push(hostname);
      const entry = names[hostname];
      if (entry === undefined)
        throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return typeof entry === 'function' ? entry() : entry;
    },
    connect: (target) => {
      dialled.push(target);
      return connect({ host: '127.0.0.1', port });
    },
    ...options,
  });
  closers.push(() => transport.close());
  const post = (url: string, headers: Record<string, string> = {}) =>
    transport.post({ url, headers, body: '{"n":1}', signal: AbortSignal.timeout(5_000) });
  return { transport, post, dialled, resolved };
}

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

async function refusedWith(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, String(error)).toBeInstanceOf(Error);
  const reason = (error as { refusal?: { reason?: string } }).refusal?.reason;
  expect(WEBHOOK_REFUSAL_REASONS, String(error)).toContain(reason);
  return reason as string;
}

describe('forbidden destinations are refused before any connection', () => {
  it.each([
    'http://127.0.0.1/hook',
    'http://2130706433/hook',
    'http://0x7f000001/hook',
    'http://017700000001/hook',
    'http://127.1/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:7f00:1]/hook',
    'http://10.0.0.5/hook',
    'http://192.168.1.20/hook',
    'http://172.16.5.4/hook',
    'http://100.64.0.9/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::ffff:169.254.169.254]/',
    'http://[fe80::1]/hook',
    'http://[fd12:3456::1]/hook',
    'http://[ff02::1]/hook',
    'http://224.0.0.1/hook',
    'http://0.0.0.0/hook',
    'http://[::]/hook',
    'http://localhost/hook',
    'http://api.localhost/hook',
    'file:///etc/passwd',
  ])('%s', async (url) => {
    const { port, seen } = await standIn();
    const t = recordingTransport(port);
    await refusedWith(t.post(url));
    expect(t.dialled).toEqual([]);
    expect(t.resolved).toEqual([]);
    expect(seen).toEqual([]);
  });

  it.each([
    ['loopback', [v4('127.0.0.1')]],
    ['private', [v4('10.1.2.3')]],
    ['the metadata address', [v4('169.254.169.254')]],
    ['CGNAT', [v4('100.100.100.200')]],
    ['IPv4-mapped loopback', [v6('::ffff:127.0.0.1')]],
    ['unique-local', [v6('fd00:ec2::254')]],
    ['IPv6 loopback', [v6('::1')]],
    ['one public and one private address', [v4('93.184.215.14'), v4('10.0.0.1')]],
    ['no address at all', []],
  ])('a name the resolver maps to %s', async (_label, addresses) => {
    const { port, seen } = await standIn();
    const t = recordingTransport(port, { 'hooks.example.com': addresses });
    const reason = await refusedWith(t.post('https://hooks.example.com/a2a'));
    expect(reason).toBe(addresses.length === 0 ? 'no-address' : 'address');
    expect(t.resolved).toEqual(['hooks.example.com']);
    expect(t.dialled).toEqual([]);
    expect(seen).toEqual([]);
  });
});

describe('allowed destinations: resolved once, connected to the checked address', () => {
  it('a public name is pinned to the address it resolved to (recorded, never dialled)', async () => {
    const { port, seen } = await standIn();
    const t = recordingTransport(port, {
      'hooks.example.com': [v6('2606:2800:21f:cb07:6820:80da:af6b:8b2c'), v4('93.184.215.14')],
    });
    const answer = await t.post(`http://hooks.example.com:${port}/a2a`, { 'X-Test': '1' });
    expect(answer).toMatchObject({ status: 200, body: 'ok', address: '93.184.215.14' });
    expect(t.dialled).toEqual([
      {
        protocol: 'http:',
        hostname: 'hooks.example.com',
        servername: 'hooks.example.com',
        address: '93.184.215.14', // IPv4 first when the name has one
        family: 4,
        port,
        by: 'public',
      },
    ]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ host: `hooks.example.com:${port}`, body: '{"n":1}' });
    expect(seen[0]?.headers['x-test']).toBe('1');
    expect(seen[0]?.headers['content-length']).toBe('7');
  });

  it('DNS rebinding: a later connection of a name that now resolves to loopback is refused', async () => {
    const { port, seen } = await standIn();
    let calls = 0;
    const t = recordingTransport(
      port,
      { 'rebind.example.com': () => (calls++ === 0 ? [v4('93.184.215.14')] : [v4('127.0.0.1')]) },
      { keepAlive: false },
    );
    expect((await t.post(`http://rebind.example.com:${port}/`)).status).toBe(200);
    await refusedWith(t.post(`http://rebind.example.com:${port}/`));
    expect(t.resolved).toEqual(['rebind.example.com', 'rebind.example.com']);
    expect(t.dialled.map((d) => d.address)).toEqual(['93.184.215.14']);
    expect(seen).toHaveLength(1);
  });

  it('keep-alive reuses the checked connection: one resolution, one dial for three POSTs', async () => {
    const { port, seen, connections } = await standIn();
    const t = recordingTransport(port, { 'hooks.example.com': [v4('93.184.215.14')] });
    for (let i = 0; i < 3; i++) await t.post(`http://hooks.example.com:${port}/`);
    expect(seen).toHaveLength(3);
    expect(t.resolved).toHaveLength(1);
    expect(t.dialled).toHaveLength(1);
    expect(connections()).toBe(1);
  });

  it('a redirect is not followed, even to a public address: the 3xx is the answer', async () => {
    const { port, seen } = await standIn((res) => {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
    });
    const t = recordingTransport(port, { 'hooks.example.com': [v4('93.184.215.14')] });
    const answer = await t.post(`http://hooks.example.com:${port}/`);
    expect(answer.status).toBe(302);
    expect(answer.headers.location).toBe('http://169.254.169.254/latest/meta-data/');
    expect(t.dialled.map((d) => d.address)).toEqual(['93.184.215.14']);
    expect(t.resolved).toEqual(['hooks.example.com']);
    expect(seen).toHaveLength(1);
  });

  it('the allow list opens a private name and a CIDR', async () => {
    const { port } = await standIn();
    const t = recordingTransport(
      port,
      { 'hooks.internal.example': [v4('10.9.9.9')], 'any.example': [v4('10.20.1.1')] },
      { policy: { allow: ['hooks.internal.example', '10.20.0.0/16'] } },
    );
    expect((await t.post(`http://hooks.internal.example:${port}/`)).status).toBe(200);
    expect((await t.post(`http://any.example:${port}/`)).status).toBe(200);
    expect((await t.post(`http://10.20.3.3:${port}/`)).status).toBe(200);
    expect(t.dialled.map((d) => [d.address, d.by])).toEqual([
      ['10.9.9.9', 'allow-list'],
      ['10.20.1.1', 'allow-list'],
      ['10.20.3.3', 'allow-list'],
    ]);
    await refusedWith(t.post(`http://10.21.0.1:${port}/`));
  });

  it('allowPrivateNetworks: the default connector really delivers to 127.0.0.1', async () => {
    const { port, seen } = await standIn();
    const transport = createWebhookTransport({ policy: { allowPrivateNetworks: true } });
    closers.push(() => transport.close());
    const answer = await transport.post({
      url: `http://127.0.0.1:${port}/hook`,
      headers: { 'content-type': 'application/a2a+json' },
      body: '{}',
      signal: AbortSignal.timeout(5_000),
    });
    expect(answer).toMatchObject({ status: 200, address: '127.0.0.1' });
    expect(seen[0]?.headers['content-type']).toBe('application/a2a+json');
  });

  it('a large response body is read only up to maxResponseBytes', async () => {
    const { port } = await standIn((res) => {
      res.writeHead(503, { 'content-type': 'text/html' });
      res.end('x'.repeat(1_000_000));
    });
    const t = recordingTransport(
      port,
      { 'hooks.example.com': [v4('93.184.215.14')] },
      { maxResponseBytes: 1_000 },
    );
    const answer = await t.post(`http://hooks.example.com:${port}/`);
    expect(answer.status).toBe(503);
    expect(answer.body).toHaveLength(1_000);
  });

  it('a POST that gets no answer is aborted by its signal', async () => {
    const { port } = await standIn(() => {});
    const t = recordingTransport(port, { 'hooks.example.com': [v4('93.184.215.14')] });
    const error = await t.transport
      .post({
        url: `http://hooks.example.com:${port}/`,
        headers: {},
        body: '',
        signal: AbortSignal.timeout(200),
      })
      .catch((e: unknown) => e);
    expect((error as Error).name).toMatch(/AbortError|TimeoutError/);
  });

  it('https: TLS to the pinned address, SNI and certificate checked for the host name', async () => {
    const key = readFileSync(join(TLS_DIR, 'key.pem'));
    const cert = readFileSync(join(TLS_DIR, 'cert.pem'));
    const { port, seen } = await standIn(
      (res) => res.end('secure'),
      createHttpsServer({ key, cert }) as unknown as Server,
    );
    const names = {
      'hooks.example.test': [v4('127.0.0.1')],
      'other.example.test': [v4('127.0.0.1')],
    };
    const transport = createWebhookTransport({
      policy: { allow: ['127.0.0.1'] },
      resolve: async (name) => names[name as keyof typeof names] ?? [],
      tls: { ca: cert },
    });
    closers.push(() => transport.close());
    const post = (url: string) =>
      transport.post({ url, headers: {}, body: 'x', signal: AbortSignal.timeout(5_000) });
    const answer = await post(`https://hooks.example.test:${port}/a2a`);
    expect(answer).toMatchObject({ status: 200, body: 'secure', address: '127.0.0.1' });
    expect(seen[0]).toMatchObject({
      host: `hooks.example.test:${port}`,
      servername: 'hooks.example.test',
    });
    // The certificate names hooks.example.test, not other.example.test: refused by TLS.
    const mismatch = await post(`https://other.example.test:${port}/a2a`).catch((e: unknown) => e);
    expect((mismatch as { code?: string }).code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    // An IP URL is checked against the certificate's IP entry.
    expect((await post(`https://127.0.0.1:${port}/a2a`)).status).toBe(200);
  });
});
