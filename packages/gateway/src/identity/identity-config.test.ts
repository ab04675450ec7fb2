import { describe, expect, it } from 'vitest';
import { parseIdentityConfig, sha256HexOf } from './identity-config.js';

const KEY = 'k-0123456789abcdef';

function problem(raw: unknown): string {
  try {
    parseIdentityConfig(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(RangeError);
    return (error as Error).message;
  }
  throw new Error('parsed');
}

describe('parseIdentityConfig', () => {
  it('fills in the defaults for an absent section', () => {
    expect(parseIdentityConfig(undefined)).toEqual({
      anonymous: 'allow',
      apiKeys: [],
      trustedProxies: [],
      ipv6PrefixLength: 64,
    });
  });

  it('reads every field and fills the JWT defaults', () => {
    const config = parseIdentityConfig({
      anonymous: 'refuse',
      apiKeys: [
        { key: KEY, caller: 'alice', tier: 'gold' },
        { sha256: sha256HexOf('other-key-0123456789').toUpperCase(), caller: 'bob' },
      ],
      apiKeysFile: 'keys.yaml',
      jwt: { jwksUrl: 'https://issuer.example.com/jwks', issuer: 'iss', audience: ['a', 'b'] },
      trustedHeader: { name: 'X-Caller', fromCidrs: ['10.0.0.0/8', '::1'] },
      trustedProxies: ['192.0.2.0/24'],
      ipv6PrefixLength: 56,
    });
    expect(config.apiKeys[1]).toEqual({
      sha256: sha256HexOf('other-key-0123456789'),
      caller: 'bob',
    });
    expect(config.jwt).toMatchObject({
      callerClaim: 'sub',
      clockToleranceSeconds: 0,
      audience: ['a', 'b'],
    });
    expect(config.jwt?.algorithms).toContain('ES256');
    expect(config.jwt?.algorithms).not.toContain('HS256');
    expect(config.trustedHeader).toEqual({ name: 'x-caller', fromCidrs: ['10.0.0.0/8', '::1'] });
    expect(config.anonymous).toBe('refuse');
    expect(config.ipv6PrefixLength).toBe(56);
  });

  it('names a bad sha256 by its path', () => {
    expect(
      problem({
        apiKeys: [
          { key: KEY, caller: 'a' },
          { key: `${KEY}x`, caller: 'b' },
          { sha256: 'abc', caller: 'c' },
        ],
      }),
    ).toBe('identity.apiKeys[2].sha256: must be 64 hex characters');
  });

  it('names every problem at once, unknown fields too', () => {
    const message = problem({
      anonymous: 'maybe',
      apiKeys: [{ caller: 'a' }, { key: 'short', caller: '' }],
      trustedProxies: ['10.0.0.0/33'],
      extra: 1,
    });
    expect(message).toMatch(/^\d+ problems: /);
    expect(message).toContain('identity.anonymous: must be "allow" or "refuse"');
    expect(message).toContain('identity.apiKeys[0].key: is required (or sha256)');
    expect(message).toContain('identity.apiKeys[1].key: must be at least 16 characters');
    expect(message).toContain('identity.apiKeys[1].caller: must be a non-empty string');
    expect(message).toContain('identity.trustedProxies[0]: must be an IP address or CIDR range');
    expect(message).toContain('identity: unknown field "extra"');
  });

  it('refuses both key and sha256 in one entry', () => {
    expect(problem({ apiKeys: [{ key: KEY, sha256: sha256HexOf(KEY), caller: 'a' }] })).toBe(
      'identity.apiKeys[0].sha256: give key or sha256, not both',
    );
  });

  it('refuses a key given twice, in clear and hashed, without echoing it', () => {
    const message = problem({
      apiKeys: [
        { key: KEY, caller: 'a' },
        { sha256: sha256HexOf(KEY), caller: 'b' },
      ],
    });
    expect(message).toBe('identity.apiKeys[1]: the same key as identity.apiKeys[0]');
    expect(message).not.toContain(KEY);
  });

  it('needs exactly one JWKS source, the issuer and the audience', () => {
    const message = problem({ jwt: { jwksFile: 'a.json', jwksUrl: 'https://x.example/jwks' } });
    expect(message).toContain('identity.jwt.jwksUrl: give jwksUrl or jwksFile (one)');
    expect(message).toContain('identity.jwt.issuer: is required');
    expect(message).toContain('identity.jwt.audience: is required');
    expect(problem({ jwt: { issuer: 'i', audience: 'a' } })).toBe(
      'identity.jwt.jwksUrl: give jwksUrl or jwksFile (one)',
    );
  });

  it('takes plain-HTTP JWKS only from a loopback host', () => {
    const jwt = { issuer: 'i', audience: 'a' };
    expect(
      parseIdentityConfig({ jwt: { ...jwt, jwksUrl: 'http://127.0.0.1:8080/jwks' } }).jwt?.jwksUrl,
    ).toBe('http://127.0.0.1:8080/jwks');
    expect(parseIdentityConfig({ jwt: { ...jwt, jwksUrl: 'http://[::1]:1/j' } }).jwt).toBeDefined();
    expect(problem({ jwt: { ...jwt, jwksUrl: 'http://issuer.example.com/jwks' } })).toBe(
      'identity.jwt.jwksUrl: must be an https:// URL (http:// only on a loopback host)',
    );
  });

  it('refuses HMAC algorithms and a tolerance out of range', () => {
    const message = problem({
      jwt: {
        jwksFile: 'k.json',
        issuer: 'i',
        audience: 'a',
        algorithms: ['HS256'],
        clockToleranceSeconds: 301,
      },
    });
    expect(message).toContain('identity.jwt.algorithms[0]: must be one of RS256');
    expect(message).toContain(
      'identity.jwt.clockToleranceSeconds: must be an integer from 0 to 300',
    );
  });

  it('checks the trusted header', () => {
    const message = problem({ trustedHeader: { name: 'bad header', fromCidrs: [] } });
    expect(message).toContain('identity.trustedHeader.name: must be an HTTP header name');
    expect(message).toContain(
      'identity.trustedHeader.fromCidrs: must list at least one CIDR range',
    );
    expect(problem({ trustedHeader: { name: 'x-user' } })).toBe(
      'identity.trustedHeader.fromCidrs: is required',
    );
  });

  it('uses the path prefix it is given', () => {
    expect(() => parseIdentityConfig({ anonymous: 1 }, 'gateway.identity')).toThrow(
      'gateway.identity.anonymous: must be "allow" or "refuse"',
    );
  });
});
