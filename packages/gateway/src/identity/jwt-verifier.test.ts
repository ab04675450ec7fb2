import { UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type JwksServer,
  serveJwks,
  signToken,
  type TestKey,
  testKey,
} from './identity.test-helpers.js';
import { parseIdentityConfig } from './identity-config.js';
import { createJwtVerifier, looksLikeJwt } from './jwt-verifier.js';

const NOW_S = 1_800_000_000;
const nowMs = () => NOW_S * 1000;
const ISSUER = 'https://issuer.example.com';
const AUDIENCE = 'a2a-gateway';

function jwtConfig(extra: Record<string, unknown>) {
  const jwt = parseIdentityConfig({
    jwt: { issuer: ISSUER, audience: AUDIENCE, tierClaim: 'plan', ...extra },
  }).jwt;
  if (jwt === undefined) throw new Error('no jwt config');
  return jwt;
}

const valid = { issuer: ISSUER, audience: AUDIENCE, issuedAt: NOW_S - 60, expiresAt: NOW_S + 600 };

describe('createJwtVerifier', () => {
  let key: TestKey;
  let other: TestKey;
  let jwks: JwksServer;

  beforeAll(async () => {
    key = await testKey('k1');
    other = await testKey('k2');
    jwks = await serveJwks([key.jwk]);
  });
  afterAll(async () => {
    await jwks.close();
  });

  it('accepts a valid token from a remote JWKS: caller from sub, tier from its claim', async () => {
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    const token = await signToken(key, { ...valid, claims: { sub: 'alice', plan: 'gold' } });
    expect(await verify(token)).toEqual({ ok: true, caller: 'alice', tier: 'gold' });
    expect(jwks.requests()).toBeGreaterThanOrEqual(1);
  });

  it('accepts a valid token from a local JWKS, with another caller claim and no tier', async () => {
    const verify = createJwtVerifier(jwtConfig({ jwksFile: 'k.json', callerClaim: 'client_id' }), {
      nowMs,
      jwks: { keys: [key.jwk] },
    });
    const token = await signToken(key, { ...valid, claims: { sub: 'x', client_id: 'svc-7' } });
    expect(await verify(token)).toEqual({ ok: true, caller: 'svc-7' });
  });

  it('refuses an expired token as expired-token, unless within the tolerance', async () => {
    const token = await signToken(key, { ...valid, expiresAt: NOW_S - 10, claims: { sub: 'a' } });
    const strict = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    expect(await strict(token)).toMatchObject({ ok: false, reason: 'expired-token' });
    const lenient = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url, clockToleranceSeconds: 30 }), {
      nowMs,
    });
    expect(await lenient(token)).toEqual({ ok: true, caller: 'a' });
  });

  it('refuses a token not valid yet (nbf)', async () => {
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    const token = await signToken(key, { ...valid, notBefore: NOW_S + 60, claims: { sub: 'a' } });
    expect(await verify(token)).toMatchObject({ ok: false, reason: 'bad-token' });
  });

  it('refuses a wrong audience and a wrong issuer, naming the claim', async () => {
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    const wrongAudience = await signToken(key, {
      ...valid,
      audience: 'other',
      claims: { sub: 'a' },
    });
    const wrongIssuer = await signToken(key, {
      ...valid,
      issuer: 'https://evil',
      claims: { sub: 'a' },
    });
    expect(await verify(wrongAudience)).toEqual({
      ok: false,
      reason: 'bad-token',
      message: 'the token\'s "aud" claim is wrong',
    });
    expect(await verify(wrongIssuer)).toEqual({
      ok: false,
      reason: 'bad-token',
      message: 'the token\'s "iss" claim is wrong',
    });
  });

  it('refuses a token signed by another key, with the known kid or an unknown one', async () => {
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    const forged = await signToken({ ...other, kid: 'k1' }, { ...valid, claims: { sub: 'a' } });
    const unknownKid = await signToken(other, { ...valid, claims: { sub: 'a' } });
    expect(await verify(forged)).toMatchObject({ ok: false, reason: 'bad-token' });
    expect(await verify(unknownKid)).toEqual({
      ok: false,
      reason: 'bad-token',
      message: 'no known key signed the token',
    });
  });

  it('refuses a token whose signature was altered', async () => {
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    const token = await signToken(key, { ...valid, claims: { sub: 'a' } });
    const [h, p, s] = token.split('.') as [string, string, string];
    const flipped = `${h}.${p}.${s.startsWith('A') ? `B${s.slice(1)}` : `A${s.slice(1)}`}`;
    expect(await verify(flipped)).toMatchObject({ ok: false, reason: 'bad-token' });
  });

  it('refuses an unsecured token and an algorithm not accepted', async () => {
    const none = new UnsecuredJWT({ sub: 'a' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime(NOW_S + 60)
      .encode();
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    expect(await verify(none)).toMatchObject({ ok: false, reason: 'bad-token' });
    const rsOnly = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url, algorithms: ['RS256'] }), {
      nowMs,
    });
    const token = await signToken(key, { ...valid, claims: { sub: 'a' } });
    expect(await rsOnly(token)).toEqual({
      ok: false,
      reason: 'bad-token',
      message: 'the token uses an algorithm not accepted',
    });
  });

  it('needs the caller claim, and a tier claim that names a tier', async () => {
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    const noSub = await signToken(key, valid);
    const numericSub = await signToken(key, { ...valid, claims: { sub: 42 as unknown as string } });
    const badTier = await signToken(key, { ...valid, claims: { sub: 'a', plan: ['gold'] } });
    expect(await verify(noSub)).toEqual({
      ok: false,
      reason: 'bad-token',
      message: 'the token has no "sub" claim naming the caller',
    });
    expect(await verify(numericSub)).toMatchObject({ ok: true, caller: '42' });
    expect(await verify(badTier)).toMatchObject({ ok: false, reason: 'bad-token' });
  });

  it('refuses what is not a JWT without asking the key set', async () => {
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: jwks.url }), { nowMs });
    const before = jwks.requests();
    expect(await verify('not-a-token')).toMatchObject({ ok: false, reason: 'bad-token' });
    expect(await verify(`a.b.${'c'.repeat(20_000)}`)).toMatchObject({ reason: 'bad-token' });
    expect(jwks.requests()).toBe(before);
  });

  it('says jwks-unavailable, not bad-token, when the key set cannot be fetched', async () => {
    const down = await serveJwks([key.jwk]);
    const url = down.url;
    await down.close();
    const verify = createJwtVerifier(jwtConfig({ jwksUrl: url }), { nowMs });
    const token = await signToken(key, { ...valid, claims: { sub: 'a' } });
    expect(await verify(token)).toMatchObject({ ok: false, reason: 'jwks-unavailable' });
    const notFound = createJwtVerifier(jwtConfig({ jwksUrl: `${jwks.url}x` }), { nowMs });
    expect(await notFound(token)).toMatchObject({ ok: false, reason: 'jwks-unavailable' });
  });

  it('refuses a JWKS file that holds no key set', () => {
    expect(() =>
      createJwtVerifier(jwtConfig({ jwksFile: '/etc/k.json' }), { jwks: { keys: 'none' } }),
    ).toThrow(/^\/etc\/k\.json: not a JSON Web Key Set/);
  });
});

describe('looksLikeJwt', () => {
  it('wants three base64url segments', () => {
    expect(looksLikeJwt('a.b.c')).toBe(true);
    expect(looksLikeJwt('a.b.')).toBe(false);
    expect(looksLikeJwt('a.b')).toBe(false);
    expect(looksLikeJwt('a.b.c=')).toBe(false);
  });
});
