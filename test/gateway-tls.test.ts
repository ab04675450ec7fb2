/**
 * `a2a-ratelimit gateway --tls-cert --tls-key`: HTTPS on the listener, as a real process in front
 * of the SDK's agent, called over TLS trusting a self-signed certificate made by openssl: the
 * banner and the card's interface URLs say https, SendMessage is admitted and then refused with
 * the very bytes a plain HTTP gateway writes, SSE flows, and SIGHUP re-reads the certificate
 * (a bad pair keeps the running one). One flag without the other, or an unreadable or unparsable
 * file, is refused in one line with a non-zero exit.
 */

import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliProcess } from './cli-process.helpers.js';
import {
  jsonRpcSend,
  type SdkUpstream,
  startSdkUpstream,
  textMessageJson,
} from './gateway.helpers.js';
import { type GatewayProcess, startGatewayProcess } from './gateway-process.helpers.js';

const config = `policies:
  - name: per-caller
    kind: rate
    scope: caller
    methods: [SendMessage, SendStreamingMessage]
    limit: 1
    windowSeconds: 3600
    burst: 2
`;

function selfSigned(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-days',
      '1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

/** The certificate a TLS listener presents now (its fingerprint). */
function presented(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: hostname, port: Number(port), rejectUnauthorized: false },
      () => {
        resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? '');
        socket.end();
      },
    );
    socket.once('error', reject);
  });
}

/** The refused answer with its time-derived delay (whole seconds) spelled `N`. */
function withoutDelay(text: string): string {
  return text.replace(/\d+(?=s")/g, 'N').replace(/retry in \d+ s/g, 'retry in N s');
}

describe('a2a-ratelimit gateway over TLS (process)', () => {
  let upstream: SdkUpstream;
  let dir: string;
  let tls: GatewayProcess;
  let plain: GatewayProcess;
  let first: { cert: string; key: string };
  let agent: Agent;

  beforeAll(async () => {
    upstream = await startSdkUpstream();
    dir = await mkdtemp(join(tmpdir(), 'gw-tls-'));
    first = selfSigned(dir, 'first');
    await writeFile(join(dir, 'gateway.yaml'), config);
    const common = ['--upstream', upstream.baseUrl, '--config', join(dir, 'gateway.yaml')];
    [tls, plain] = await Promise.all([
      startGatewayProcess([...common, '--tls-cert', first.cert, '--tls-key', first.key]),
      startGatewayProcess(common),
    ]);
    agent = new Agent({ connect: { ca: await readFile(first.cert, 'utf8') } });
  }, 90_000);

  afterAll(async () => {
    await agent?.close();
    await Promise.all([tls?.stop('SIGKILL'), plain?.stop('SIGKILL')]);
    await upstream?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const post = (base: string, path: string, body: string, dispatcher?: Agent) =>
    undiciFetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body,
      ...(dispatcher === undefined ? {} : { dispatcher }),
    });

  it('prints https URLs; the card served over TLS advertises https interfaces', async () => {
    expect(tls.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(tls.banner).toContain(`agent card  ${tls.url}/.well-known/agent-card.json`);
    const res = await undiciFetch(`${tls.url}/.well-known/agent-card.json`, { dispatcher: agent });
    expect(res.status).toBe(200);
    const card = (await res.json()) as { supportedInterfaces: { url: string }[] };
    const urls = card.supportedInterfaces.map((i) => i.url);
    expect(urls).toEqual([`${tls.url}/a2a/jsonrpc`, `${tls.url}/a2a/rest`]);
    // Not trusting the certificate: the TLS handshake fails.
    await expect(undiciFetch(`${tls.url}/.well-known/agent-card.json`)).rejects.toThrow();
  });

  it('admits over TLS, then refuses with the bytes a plain HTTP gateway writes', async () => {
    const before = upstream.requests.length;
    const admitted = await post(tls.url, '/a2a/jsonrpc', jsonRpcSend('t-1'), agent);
    expect(admitted.status).toBe(200);
    expect(((await admitted.json()) as { result?: unknown }).result).toBeDefined();
    expect(admitted.headers.get('ratelimit')).toContain('per-caller');
    // SSE over TLS, event by event.
    const stream = await post(
      tls.url,
      '/a2a/jsonrpc',
      jsonRpcSend('t-2', 'task', 'SendStreamingMessage'),
      agent,
    );
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(await stream.text()).toContain('TASK_STATE_COMPLETED');
    expect(upstream.requests.length - before).toBe(2);

    const rest = JSON.stringify({ message: textMessageJson('t-3', 'hi') });
    const overTls = await post(tls.url, '/a2a/rest/message:send', rest, agent);
    for (const id of ['p-1', 'p-2']) {
      expect((await post(plain.url, '/a2a/jsonrpc', jsonRpcSend(id))).status).toBe(200);
    }
    const overHttp = await post(plain.url, '/a2a/rest/message:send', rest);
    expect(upstream.requests.length - before).toBe(4);
    expect(overTls.status).toBe(429);
    expect(overHttp.status).toBe(429);
    expect(overTls.headers.get('content-type')).toBe(overHttp.headers.get('content-type'));
    expect(overTls.headers.get('retry-after')).toMatch(/^\d+$/);
    const tlsBody = await overTls.text();
    expect(tlsBody).toContain('RATE_LIMIT_EXCEEDED');
    expect(withoutDelay(tlsBody)).toBe(withoutDelay(await overHttp.text()));
  });

  it('SIGHUP re-reads the certificate; a bad pair keeps the running one', async () => {
    const fingerprintOf = async (file: string) =>
      new X509Certificate(await readFile(file)).fingerprint256;
    const firstPrint = await fingerprintOf(first.cert);
    expect(await presented(tls.url)).toBe(firstPrint);
    const second = selfSigned(dir, 'second');
    await writeFile(first.cert, 'not a certificate');
    tls.child.kill('SIGHUP');
    expect(await tls.untilStderr(/TLS certificate kept: .*\n/)).toContain('not a PEM certificate');
    expect(await presented(tls.url)).toBe(firstPrint);

    await writeFile(first.cert, await readFile(second.cert));
    await writeFile(first.key, await readFile(second.key));
    tls.child.kill('SIGHUP');
    await tls.untilStderr(/TLS certificate reloaded from .*\n/);
    expect(await presented(tls.url)).toBe(await fingerprintOf(second.cert));
    expect(tls.child.exitCode).toBeNull();
  });

  it('refuses --tls-cert without --tls-key, and an unreadable certificate, in one line', async () => {
    const missingKey = await runCliProcess([
      'gateway',
      '--upstream',
      upstream.baseUrl,
      '--tls-cert',
      first.cert,
    ]);
    expect(missingKey.code).not.toBe(0);
    expect(missingKey.stderr.trim().split('\n')).toHaveLength(1);
    expect(missingKey.stderr).toContain('--tls-cert needs --tls-key');
    const unreadable = await runCliProcess([
      'gateway',
      '--upstream',
      upstream.baseUrl,
      '--port',
      '0',
      '--tls-cert',
      join(dir, 'absent.crt'),
      '--tls-key',
      first.key,
    ]);
    expect(unreadable.code).not.toBe(0);
    expect(unreadable.stderr.trim().split('\n')).toHaveLength(1);
    expect(unreadable.stderr).toContain('absent.crt: cannot read it');
  }, 60_000);
});
