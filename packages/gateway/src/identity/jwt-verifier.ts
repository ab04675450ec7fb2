/**
 * @module jwt-verifier
 * JWT bearer tokens checked with `jose` (JWKS, issuer, audience, `exp`, `nbf`); the caller and tier
 * read from claims.
 */

import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import type { JwtConfig } from './identity-config.js';

/** Longest bearer token read (a longer one is refused unread). */
export const MAX_TOKEN_LENGTH = 16_384;

/** What a token says, or why it says nothing. */
export type JwtOutcome =
  | { readonly ok: true; readonly caller: string; readonly tier?: string }
  | {
      readonly ok: false;
      readonly reason: 'bad-token' | 'expired-token' | 'jwks-unavailable';
      readonly message: string;
    };

/**
 * Verifies one token.
 */
export type JwtVerifier = (token: string) => Promise<JwtOutcome>;

/**
 * How the verifier reads time and the JWKS.
 */
export interface JwtVerifierDeps {
  /** Milliseconds since the epoch (default `Date.now`); `exp` and `nbf` are checked against it. */
  readonly nowMs?: () => number;
  /** The parsed `jwksFile` content, when the config names one. */
  readonly jwks?: unknown;
}

/**
 * Whether text has the shape of a compact JWS (`header.payload.signature`, base64url).
 *
 * @example
 * ```ts
 * looksLikeJwt('eyJh.eyJz.c2ln'); // true
 * looksLikeJwt('sk_live_123');    // false
 * ```
 */
export function looksLikeJwt(text: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(text);
}

/**
 * A verifier for `config`: `createRemoteJWKSet` for `jwksUrl` (fetched on first use, cached and
 * refetched by jose when a token names an unknown `kid`), `createLocalJWKSet` over `deps.jwks`
 * for `jwksFile`. Throws a `RangeError` when the file's content is not a JWKS.
 *
 * @example
 * ```ts
 * const verify = createJwtVerifier(config.jwt);
 * await verify(token); // { ok: true, caller: 'alice', tier: 'gold' }
 * ```
 */
export function createJwtVerifier(config: JwtConfig, deps: JwtVerifierDeps = {}): JwtVerifier {
  const keys = keySetOf(config, deps.jwks);
  const nowMs = deps.nowMs;
  const options = {
    issuer: config.issuer,
    audience: typeof config.audience === 'string' ? config.audience : [...config.audience],
    algorithms: [...config.algorithms],
    clockTolerance: config.clockToleranceSeconds,
  };
  return async (token) => {
    if (token.length > MAX_TOKEN_LENGTH || !looksLikeJwt(token)) {
      return { ok: false, reason: 'bad-token', message: 'the bearer token is not a JWT' };
    }
    let payload: Record<string, unknown>;
    try {
      const verified = await jwtVerify(
        token,
        keys,
        nowMs === undefined ? options : { ...options, currentDate: new Date(nowMs()) },
      );
      payload = verified.payload;
    } catch (error) {
      return failureOf(error);
    }
    const caller = claimText(payload[config.callerClaim]);
    if (caller === undefined) {
      return {
        ok: false,
        reason: 'bad-token',
        message: `the token has no "${config.callerClaim}" claim naming the caller`,
      };
    }
    if (config.tierClaim === undefined || payload[config.tierClaim] === undefined) {
      return { ok: true, caller };
    }
    const tier = claimText(payload[config.tierClaim]);
    if (tier === undefined) {
      return {
        ok: false,
        reason: 'bad-token',
        message: `the token's "${config.tierClaim}" claim is not a tier name`,
      };
    }
    return { ok: true, caller, tier };
  };
}

function keySetOf(config: JwtConfig, jwks: unknown): JWTVerifyGetKey {
  if (config.jwksUrl !== undefined) return createRemoteJWKSet(new URL(config.jwksUrl));
  try {
    return createLocalJWKSet(jwks as JSONWebKeySet);
  } catch (error) {
    throw new RangeError(
      `${config.jwksFile}: not a JSON Web Key Set: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/** A claim as a name: a non-empty string, or a finite number written out. */
function claimText(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() === '' ? undefined : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** Why jose refused: the token's fault (401) or the key set's (we cannot tell; 503). */
function failureOf(error: unknown): JwtOutcome {
  if (error instanceof errors.JWTExpired) {
    return { ok: false, reason: 'expired-token', message: 'the token has expired' };
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    return {
      ok: false,
      reason: 'bad-token',
      message: `the token's "${error.claim}" claim is wrong`,
    };
  }
  if (
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    !(error instanceof errors.JOSEError) ||
    error.code === 'ERR_JOSE_GENERIC'
  ) {
    return {
      ok: false,
      reason: 'jwks-unavailable',
      message: 'the token cannot be checked now: its key set is unavailable',
    };
  }
  if (error instanceof errors.JWKSNoMatchingKey) {
    return { ok: false, reason: 'bad-token', message: 'no known key signed the token' };
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return { ok: false, reason: 'bad-token', message: 'the token uses an algorithm not accepted' };
  }
  return { ok: false, reason: 'bad-token', message: 'the token is not valid' };
}
