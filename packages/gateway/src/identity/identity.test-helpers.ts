/**
 * @module identity.test-helpers
 * Test fixtures for the identity tests: key pairs, signed tokens, and a JWKS served on loopback.
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from 'jose';

/** A signing key pair and its public JWK (with a `kid`). */
export interface TestKey {
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
  readonly kid: string;
}

/**
 * A fresh ES256 key pair with the given `kid`.
 */
export async function testKey(kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  return { privateKey, jwk, kid };
}

/** What a signed test token says. */
export interface TokenOptions {
  readonly issuer?: string;
  readonly audience?: string;
  /** Seconds since the epoch. */
  readonly issuedAt?: number;
  readonly expiresAt?: number;
  readonly notBefore?: number;
  readonly claims?: JWTPayload;
}

/**
 * A compact ES256 JWT signed with `key`.
 */
export async function signToken(key: TestKey, options: TokenOptions = {}): Promise<string> {
  const jwt = new SignJWT({ ...options.claims }).setProtectedHeader({ alg: 'ES256', kid: key.kid });
  if (options.issuer !== undefined) jwt.setIssuer(options.issuer);
  if (options.audience !== undefined) jwt.setAudience(options.audience);
  if (options.issuedAt !== undefined) jwt.setIssuedAt(options.issuedAt);
  if (options.expiresAt !== undefined) jwt.setExpirationTime(options.expiresAt);
  if (options.notBefore !== undefined) jwt.setNotBefore(options.notBefore);
  return jwt.sign(key.privateKey);
}

/** A JWKS served over HTTP on loopback, counting its requests. */
export interface JwksServer {
  readonly url: string;
  readonly requests: () => number;
  close(): Promise<void>;
}

/**
 * Serves `{ keys }` at `/jwks.json` on 127.0.0.1 (port 0).
 */
export async function serveJwks(keys: readonly JWK[]): Promise<JwksServer> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    count++;
    if (req.url !== '/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    requests: () => count,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
      }),
  };
}
