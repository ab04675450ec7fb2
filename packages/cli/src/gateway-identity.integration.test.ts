/**
 * Identity through the gateway engine, with the identity module a config's `identity:` builds:
 * an API key (X-API-Key or Bearer, in clear or as SHA-256) names its caller and tier; an unknown
 * key is a 401 in the binding's JSON format and reaches nothing; a JWT from a JWKS file names its
 * caller, an expired one is a 401. Upstream: the SDK's agent with no limiter of ours.
 */

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Policy } from 'a2a-ratelimit';
import {
  createIdentityResolver,
  type IdentityResolver,
  identifyWith,
  parseIdentityConfig,
} from 'a2a-ratelimit-gateway';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  jsonRpcSend,
  type SdkUpstream,
  startSdkUpstream,
  startTestGateway,
  type TestGateway,
  textMessageJson,
} from '../../../test/gateway.helpers.js';
import { parseGatewayOptions, startGateway } from './gateway-command.js';
import { loadGatewayConfig } from './gateway-config.js';

const FREE_KEY = 'free-key-0123456789abcdef';
const PRO_KEY = 'pro-key-0123456789abcdefgh';

const perCaller: Policy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage'],
  defaultTier: 'free',
  tiers: {
    free: { limit: 1, windowSeconds: 60, burst: 1 },
    pro: { limit: 60, windowSeconds: 60, burst: 3 },
  },
};

describe('gateway identity (identity: of the config)', () => {
  let upstream: SdkUpstream;
  let gw: TestGateway;
  let resolver: IdentityResolver;
  let dir: string;
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

  beforeAll(async () => {
    upstream = await startSdkUpstream();
    dir = await mkdtemp(join(tmpdir(), 'gw-identity-'));
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
    await writeFile(join(dir, 'jwks.json'), JSON.stringify({ keys: [jwk] }));
    const config = parseIdentityConfig({
      apiKeys: [
        { key: FREE_KEY, caller: 'free-caller' },
        { sha256: createHash('sha256').update(PRO_KEY).digest('hex'), caller: 'pro', tier: 'pro' },
      ],
      jwt: { jwksFile: 'jwks.json', issuer: 'https://issuer.test', audience: 'gateway' },
    });
    resolver = await createIdentityResolver(config, { baseDir: dir });
    gw = await startTestGateway(upstream.baseUrl, {
      policies: [perCaller],
      gateway: { identify: identifyWith(() => resolver) },
    });
  });

  afterAll(async () => {
    await gw?.close();
    resolver?.close();
    await upstream?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const send = (id: string, headers: Record<string, string>) =>
    fetch(`${gw.baseUrl}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
      body: jsonRpcSend(id),
    });

  const token = (claims: { sub: string }, expiresAt: number) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('https://issuer.test')
      .setAudience('gateway')
      .setIssuedAt()
      .setExpirationTime(expiresAt)
      .sign(privateKey);

  it('an API key names its caller and tier: free refused on its 2nd call, pro admitted 3 times', async () => {
    const before = upstream.requests.length;
    expect((await send('f1', { 'x-api-key': FREE_KEY })).status).toBe(200);
    const refused = await send('f2', { 'x-api-key': FREE_KEY });
    const body = (await refused.json()) as {
      error: { code: number; data: { metadata?: Record<string, string> }[] };
    };
    expect(body.error.code).toBe(-32603);
    expect(body.error.data[0]?.metadata?.tier).toBe('free');
    for (const id of ['p1', 'p2', 'p3']) {
      const ok = await send(id, { authorization: `Bearer ${PRO_KEY}` });
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { error?: unknown }).error).toBeUndefined();
    }
    // f1 and the three pro calls reached the upstream; the refused one did not.
    expect(upstream.requests.length - before).toBe(4);
  });

  it('an unknown key is a 401 in JSON on both bindings, and reaches nothing', async () => {
    const before = upstream.requests.length;
    const rpc = await send('u1', { 'x-api-key': 'no-such-key-0123456789' });
    expect(rpc.status).toBe(401);
    expect(rpc.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const rpcBody = (await rpc.json()) as {
      id: string;
      error: { code: number; data: { reason?: string; metadata?: Record<string, string> }[] };
    };
    expect(rpcBody.id).toBe('u1');
    expect(rpcBody.error.data[0]).toMatchObject({
      reason: 'UNAUTHENTICATED',
      metadata: { failure: 'unknown-key' },
    });

    const rest = await fetch(`${gw.baseUrl}/a2a/rest/message:send`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'a2a-version': '1.0',
        authorization: 'Bearer nope-nope-nope-nope',
      },
      body: JSON.stringify({ message: textMessageJson('u2', 'hi') }),
    });
    expect(rest.status).toBe(401);
    expect(rest.headers.get('content-type')).toMatch(/^application\/a2a\+json/);
    const restBody = (await rest.json()) as { error: { code: number; status: string } };
    expect(restBody.error).toMatchObject({ code: 401, status: 'UNAUTHENTICATED' });
    expect(upstream.requests.length).toBe(before);
  });

  it('a valid JWT names its caller; an expired one is a 401 expired-token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const valid = await token({ sub: 'jwt-user' }, now + 300);
    expect((await send('j1', { authorization: `Bearer ${valid}` })).status).toBe(200);
    // Same caller (free tier, burst 1): its second call is refused by its own bucket.
    const second = await send('j2', { authorization: `Bearer ${valid}` });
    const secondBody = (await second.json()) as { error?: { code: number } };
    expect(secondBody.error?.code).toBe(-32603);

    const expired = await token({ sub: 'jwt-user-2' }, now - 600);
    const refused = await send('j3', { authorization: `Bearer ${expired}` });
    expect(refused.status).toBe(401);
    const body = (await refused.json()) as {
      error: { data: { metadata?: Record<string, string> }[] };
    };
    expect(body.error.data[0]?.metadata?.failure).toBe('expired-token');
  });
});

describe("README's gateway.yaml, run as written", () => {
  it('its keys name their callers (in clear and by SHA-256), an unknown key is a 401', async () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const yaml = /```yaml\n(# gateway\.yaml[\s\S]*?)```/.exec(readme)?.[1];
    expect(yaml).toBeDefined();
    const upstream = await startSdkUpstream();
    const dir = await mkdtemp(join(tmpdir(), 'gw-readme-'));
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, yaml ?? '');
    const running = await startGateway(
      parseGatewayOptions({ upstream: upstream.baseUrl, port: '0', config: file }),
      await loadGatewayConfig(file),
      () => {},
    );
    try {
      const send = (id: string, key: string) =>
        fetch(`${running.url}/a2a/jsonrpc`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': key },
          body: jsonRpcSend(id),
        });
      expect((await send('r1', 'orchestrator-7-key-0123456789')).status).toBe(200);
      expect((await send('r2', 'billing-agent-key-0123456789')).status).toBe(200);
      expect((await send('r3', 'not-a-key-of-anyone-000')).status).toBe(401);
      expect(upstream.requests.filter((r) => r.startsWith('POST')).length).toBe(2);
    } finally {
      await running.stop(1_000);
      await upstream.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
