import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type JwksServer,
  serveJwks,
  signToken,
  type TestKey,
  testKey,
} from './identity.test-helpers.js';
import { parseIdentityConfig, sha256HexOf } from './identity-config.js';
import {
  createIdentityResolver,
  IDENTITY_FAILURE_REASONS,
  type IdentityRequest,
  type IdentityResolver,
} from './identity-resolver.js';

const NOW_S = 1_800_000_000;
const nowMs = () => NOW_S * 1000;
const ISSUER = 'https://issuer.example.com';
const AUDIENCE = 'a2a-gateway';
const ALICE = 'ak_alice_0123456789abcdef';
const BOB = 'ak_bob_fedcba9876543210';
const CAROL = 'ak_carol_00112233445566';

function request(
  headers: IdentityRequest['headers'] = {},
  remoteAddress: string | undefined = '203.0.113.5',
): IdentityRequest {
  return { headers, remoteAddress };
}

/** A reader over an in-memory file system. */
function reader(contents: Record<string, string>) {
  const reads: string[] = [];
  return {
    reads,
    readFile: async (path: string) => {
      reads.push(path);
      const text = contents[path];
      if (text === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      return text;
    },
  };
}

describe('createIdentityResolver', () => {
  let key: TestKey;
  let jwks: JwksServer;
  let resolver: IdentityResolver;
  const internalErrors: unknown[] = [];
  const fs = reader({
    '/etc/gw/keys.yaml': `- sha256: ${sha256HexOf(CAROL)}\n  caller: carol\n  tier: silver\n`,
  });

  beforeAll(async () => {
    key = await testKey('k1');
    jwks = await serveJwks([key.jwk]);
    resolver = await createIdentityResolver(
      parseIdentityConfig({
        apiKeys: [
          { key: ALICE, caller: 'alice', tier: 'gold' },
          { sha256: sha256HexOf(BOB), caller: 'addr:bob' },
        ],
        apiKeysFile: 'keys.yaml',
        jwt: { jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE, tierClaim: 'plan' },
        trustedHeader: {
          name: 'X-Authenticated-User',
          tierName: 'X-User-Tier',
          fromCidrs: ['10.9.0.0/16'],
        },
        trustedProxies: ['10.0.0.0/16', 'fd00::/8'],
      }),
      {
        readFile: fs.readFile,
        baseDir: '/etc/gw',
        nowMs,
        onInternalError: (e) => internalErrors.push(e),
      },
    );
  });
  afterAll(async () => {
    resolver.close();
    await jwks.close();
  });

  const token = (options: Parameters<typeof signToken>[1]) =>
    signToken(key, {
      issuer: ISSUER,
      audience: AUDIENCE,
      issuedAt: NOW_S - 60,
      expiresAt: NOW_S + 600,
      ...options,
    });

  describe('API keys', () => {
    it('reads X-API-Key and Authorization: Bearer, with the tier', async () => {
      const expected = { ok: true, caller: 'alice', tier: 'gold', via: 'apiKey' };
      expect(await resolver.resolve(request({ 'x-api-key': ALICE }))).toEqual(expected);
      expect(await resolver.resolve(request({ authorization: `Bearer ${ALICE}` }))).toEqual(
        expected,
      );
      expect(await resolver.resolve(request({ authorization: `bearer  ${ALICE} ` }))).toEqual(
        expected,
      );
    });

    it('finds a key held only as its SHA-256, and escapes a caller in the address namespace', async () => {
      expect(await resolver.resolve(request({ 'x-api-key': BOB }))).toEqual({
        ok: true,
        caller: 'user:addr:bob',
        via: 'apiKey',
      });
    });

    it('finds a key from the keys file, read relative to the base directory', async () => {
      expect(await resolver.resolve(request({ authorization: `Bearer ${CAROL}` }))).toEqual({
        ok: true,
        caller: 'carol',
        tier: 'silver',
        via: 'apiKey',
      });
      expect(fs.reads).toEqual(['/etc/gw/keys.yaml']);
    });

    it('answers unknown-key for an unknown key, never anonymous', async () => {
      for (const headers of [
        { 'x-api-key': `${ALICE}x` },
        { 'x-api-key': '' },
        { authorization: `Bearer ${ALICE.slice(0, -1)}` },
        { authorization: 'Bearer' },
        { 'x-api-key': 'nope', authorization: `Bearer ${ALICE}` },
      ]) {
        expect(await resolver.resolve(request(headers))).toEqual({
          ok: false,
          reason: 'unknown-key',
          message: 'the API key is not known',
        });
      }
    });

    it('refuses two different values of one credential header', async () => {
      expect(await resolver.resolve(request({ 'x-api-key': [ALICE, BOB] }))).toMatchObject({
        ok: false,
        reason: 'ambiguous-credential',
      });
      expect(await resolver.resolve(request({ 'x-api-key': [ALICE, ALICE] }))).toMatchObject({
        ok: true,
        caller: 'alice',
      });
    });

    it('leaves the request headers as they came', async () => {
      const headers = { authorization: `Bearer ${ALICE}`, 'x-api-key': ALICE };
      const copy = structuredClone(headers);
      await resolver.resolve(request(headers));
      expect(headers).toEqual(copy);
    });
  });

  describe('JWT', () => {
    it('takes the caller and tier from a valid token', async () => {
      const jwt = await token({ claims: { sub: 'dave', plan: 'gold' } });
      expect(await resolver.resolve(request({ authorization: `Bearer ${jwt}` }))).toEqual({
        ok: true,
        caller: 'dave',
        tier: 'gold',
        via: 'jwt',
      });
    });

    it('answers expired-token for an expired token and bad-token for a wrong audience', async () => {
      const expired = await token({ expiresAt: NOW_S - 1, claims: { sub: 'dave' } });
      const foreign = await token({ audience: 'someone-else', claims: { sub: 'dave' } });
      expect(await resolver.resolve(request({ authorization: `Bearer ${expired}` }))).toMatchObject(
        {
          ok: false,
          reason: 'expired-token',
        },
      );
      expect(await resolver.resolve(request({ authorization: `Bearer ${foreign}` }))).toMatchObject(
        {
          ok: false,
          reason: 'bad-token',
        },
      );
    });

    it('reads a JWKS file through the reader', async () => {
      const files = reader({ '/k/jwks.json': JSON.stringify({ keys: [key.jwk] }) });
      const local = await createIdentityResolver(
        parseIdentityConfig({
          anonymous: 'refuse',
          jwt: { jwksFile: 'jwks.json', issuer: ISSUER, audience: AUDIENCE },
        }),
        { readFile: files.readFile, baseDir: '/k', nowMs },
      );
      const jwt = await token({ claims: { sub: 'erin' } });
      expect(await local.resolve(request({ authorization: `Bearer ${jwt}` }))).toEqual({
        ok: true,
        caller: 'erin',
        via: 'jwt',
      });
      // Without API keys, any bearer value is read as a token.
      expect(await local.resolve(request({ authorization: `Bearer ${ALICE}` }))).toMatchObject({
        reason: 'bad-token',
      });
      expect(files.reads).toEqual(['/k/jwks.json']);
      await expect(
        createIdentityResolver(
          parseIdentityConfig({ jwt: { jwksFile: 'gone.json', issuer: 'i', audience: 'a' } }),
          { readFile: files.readFile, baseDir: '/k' },
        ),
      ).rejects.toThrow('identity.jwt.jwksFile: cannot read /k/gone.json');
    });
  });

  describe('trusted header', () => {
    it('is believed from inside its CIDRs, with its tier header', async () => {
      expect(
        await resolver.resolve(
          request({ 'x-authenticated-user': 'frank', 'x-user-tier': 'gold' }, '10.9.3.4'),
        ),
      ).toEqual({ ok: true, caller: 'frank', tier: 'gold', via: 'trustedHeader' });
      expect(
        await resolver.resolve(request({ 'x-authenticated-user': 'frank' }, '::ffff:10.9.3.4')),
      ).toEqual({ ok: true, caller: 'frank', via: 'trustedHeader' });
    });

    it('is ignored from outside its CIDRs: the caller is keyed by address, the header named unbelieved', async () => {
      expect(
        await resolver.resolve(request({ 'x-authenticated-user': 'frank' }, '203.0.113.5')),
      ).toEqual({
        ok: true,
        caller: 'addr:203.0.113.5',
        via: 'address',
        unbelievedHeaders: ['x-authenticated-user'],
      });
      // From a trusted source, believed: nothing to drop.
      expect(
        await resolver.resolve(request({ 'x-authenticated-user': 'frank' }, '10.9.3.4')),
      ).not.toHaveProperty('unbelievedHeaders');
    });

    it('refuses a value that is no caller name', async () => {
      expect(
        await resolver.resolve(request({ 'x-authenticated-user': 'a\u0001b' }, '10.9.3.4')),
      ).toMatchObject({ ok: false, reason: 'bad-trusted-header' });
    });

    it('falls through to credentials when the trusted source sends no header', async () => {
      expect(await resolver.resolve(request({ 'x-api-key': ALICE }, '10.9.3.4'))).toMatchObject({
        caller: 'alice',
        via: 'apiKey',
      });
    });
  });

  describe('address', () => {
    it('keys an anonymous caller by its address, IPv4-mapped as IPv4', async () => {
      expect(await resolver.resolve(request({}, '::ffff:198.51.100.20'))).toEqual({
        ok: true,
        caller: 'addr:198.51.100.20',
        via: 'address',
      });
      expect(await resolver.resolve({ headers: {}, remoteAddress: undefined })).toEqual({
        ok: true,
        caller: 'addr:unknown',
        via: 'address',
      });
    });

    it('keys IPv6 by its /64', async () => {
      const a = await resolver.resolve(request({}, '2001:db8:1:2:aaaa::1'));
      const b = await resolver.resolve(request({}, '2001:DB8:1:2:ffff:1:2:3'));
      const c = await resolver.resolve(request({}, '2001:db8:1:3::1'));
      expect(a).toMatchObject({ caller: 'addr:2001:db8:1:2::/64' });
      expect(b).toMatchObject({ caller: 'addr:2001:db8:1:2::/64' });
      expect(c).toMatchObject({ caller: 'addr:2001:db8:1:3::/64' });
    });

    it('believes X-Forwarded-For only from trusted proxies, walking from the right', async () => {
      const xff = { 'x-forwarded-for': '198.51.100.1, 198.51.100.77, 10.0.0.9' };
      expect(await resolver.resolve(request(xff, '10.0.0.2'))).toMatchObject({
        caller: 'addr:198.51.100.77',
      });
      expect(await resolver.resolve(request(xff, '203.0.113.5'))).toMatchObject({
        caller: 'addr:203.0.113.5',
      });
      expect(
        await resolver.resolve(
          request({ 'x-forwarded-for': ['2001:db8::9', 'fd00::1'] }, 'fd00::2'),
        ),
      ).toMatchObject({ caller: 'addr:2001:db8::/64' });
    });

    it('leaves a Bearer credential alone when neither keys nor JWT are configured', async () => {
      const plain = await createIdentityResolver(parseIdentityConfig({}));
      expect(
        await plain.resolve(request({ authorization: 'Bearer upstream-token' }, '192.0.2.1')),
      ).toEqual({ ok: true, caller: 'addr:192.0.2.1', via: 'address' });
    });
  });

  describe('anonymous: refuse', () => {
    it('answers missing-credential without a credential, and still takes a good one', async () => {
      const strict = await createIdentityResolver(
        parseIdentityConfig({ anonymous: 'refuse', apiKeys: [{ key: ALICE, caller: 'alice' }] }),
      );
      expect(await strict.resolve(request())).toEqual({
        ok: false,
        reason: 'missing-credential',
        message: 'a credential is required: send an API key or a bearer token',
      });
      expect(await strict.resolve(request({ authorization: 'Basic dXNlcjpwYXNz' }))).toMatchObject({
        reason: 'missing-credential',
      });
      expect(await strict.resolve(request({ 'x-api-key': ALICE }))).toMatchObject({
        caller: 'alice',
      });
    });
  });

  it('fails to start on a bad keys file, naming it', async () => {
    const files = reader({ '/c/keys.yaml': '- sha256: 12\n  caller: x\n' });
    await expect(
      createIdentityResolver(parseIdentityConfig({ apiKeysFile: '/c/keys.yaml' }), files),
    ).rejects.toThrow('/c/keys.yaml: [0].sha256: must be 64 hex characters');
  });

  it('always answers, whatever the header values (property)', async () => {
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom(
        'Bearer ',
        'Bearer a.b.c',
        'bearer',
        `Bearer ${ALICE}`,
        ',,,',
        '[::1',
        '::ffff:',
      ),
    );
    const value = fc.oneof(fc.constant(undefined), text, fc.array(text, { maxLength: 3 }));
    const address = fc.oneof(
      fc.constant(undefined),
      fc.string(),
      fc.ipV4(),
      fc.ipV6(),
      fc.constantFrom('10.0.0.2', '10.9.0.1', 'fd00::1', '::ffff:10.0.0.2'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          authorization: value,
          'x-api-key': value,
          'x-forwarded-for': value,
          'x-authenticated-user': value,
          'x-user-tier': value,
        }),
        address,
        async (headers, remoteAddress) => {
          internalErrors.length = 0;
          const result = await resolver.resolve({ headers, remoteAddress });
          expect(internalErrors).toEqual([]);
          if (result.ok) {
            expect(result.caller).not.toBe('');
            if (result.via === 'apiKey')
              expect(['alice', 'user:addr:bob', 'carol']).toContain(result.caller);
          } else {
            expect(IDENTITY_FAILURE_REASONS).toContain(result.reason);
            expect(result.reason).not.toBe('jwks-unavailable');
            expect(result.message).not.toBe('');
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
