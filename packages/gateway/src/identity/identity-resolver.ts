/**
 * @module identity-resolver
 * Who is calling: trusted header, API key, JWT, else the client address; a failure is a 401 reason,
 * never a silent anonymous.
 */

import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { authenticatedCallerKey, createAddressKey } from 'a2a-ratelimit/server';
import {
  type ApiKeyTable,
  createApiKeyTable,
  loadApiKeysFile,
  mergeApiKeys,
  type TextReader,
} from './api-key-table.js';
import { clientAddress, createCidrSet } from './client-address.js';
import type { IdentityConfig } from './identity-config.js';
import { createJwtVerifier, type JwtVerifier, looksLikeJwt } from './jwt-verifier.js';

/**
 * Why a request has no identity. All but `jwks-unavailable` are the caller's doing (HTTP 401);
 * `jwks-unavailable` is ours (the token could not be checked: answer 503, retry later).
 *
 * @example
 * ```ts
 * IDENTITY_FAILURE_REASONS.includes('expired-token'); // true
 * ```
 */
export const IDENTITY_FAILURE_REASONS = [
  'unknown-key',
  'bad-token',
  'expired-token',
  'missing-credential',
  'ambiguous-credential',
  'bad-trusted-header',
  'jwks-unavailable',
] as const;

/** One of {@link IDENTITY_FAILURE_REASONS}. */
export type IdentityFailureReason = (typeof IDENTITY_FAILURE_REASONS)[number];

/** Where an identity came from. */
export type IdentitySource = 'apiKey' | 'jwt' | 'trustedHeader' | 'address';

/** A failed resolution: why, and one sentence for the client (never echoing a credential). */
export interface IdentityFailure {
  readonly ok: false;
  readonly reason: IdentityFailureReason;
  readonly message: string;
}

/**
 * The caller of a request. `caller` is the key the policies count by: an authenticated name as it
 * is (`alice`; escaped with `user:` when it begins with `addr:` or `user:`), an anonymous caller
 * as `addr:<IPv4>` or `addr:<IPv6 prefix>/64` — the in-process adapters' keys.
 */
export type IdentityResult =
  | {
      readonly ok: true;
      readonly caller: string;
      readonly tier?: string;
      readonly via: IdentitySource;
      /**
       * Identity headers the request carried but is not believed on (`trustedHeader`'s name and
       * tier name, sent from outside `fromCidrs`): a proxy drops them before forwarding, so an
       * agent that believes them from its proxy is not handed the caller's own claim.
       */
      readonly unbelievedHeaders?: readonly string[];
    }
  | IdentityFailure;

/** The request as the resolver reads it. */
export interface IdentityRequest {
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The connection's source address (`socket.remoteAddress`). */
  readonly remoteAddress: string | undefined;
}

/** Resolves requests to callers; `close()` when replaced by a reloaded one. */
export interface IdentityResolver {
  /** The identity of a request; never throws, never rejects. */
  resolve(request: IdentityRequest): Promise<IdentityResult>;
  /** Releases what the resolver holds; later `resolve` calls still answer. */
  close(): void;
}

/** What the resolver reads besides the request. */
export interface IdentityResolverDeps {
  /** Reads `apiKeysFile` and `jwksFile` (default: `fs.readFile` as UTF-8). */
  readonly readFile?: TextReader;
  /** Relative file paths are resolved against this directory (default: the working directory). */
  readonly baseDir?: string;
  /** Milliseconds since the epoch, for JWT `exp`/`nbf` (default `Date.now`). */
  readonly nowMs?: () => number;
  /**
   * Told of an unexpected error while resolving (a bug: the request is then refused as
   * `bad-token` rather than left unanswered). Default: none.
   */
  readonly onInternalError?: (error: unknown) => void;
}

/** Where a JSON-RPC/REST client puts an API key besides `Authorization: Bearer`. */
const API_KEY_HEADER = 'x-api-key';
const FORWARDED_FOR = 'x-forwarded-for';
/** Longest trusted-header value believed (a caller name, not a document). */
const MAX_TRUSTED_VALUE_LENGTH = 512;

/**
 * A resolver for a parsed `identity:` config (see `parseIdentityConfig`). Reads `apiKeysFile` and
 * `jwksFile` now, so a bad file fails here (a `RangeError` naming it) and a reload that builds a
 * new resolver keeps the old one until this succeeds.
 *
 * Order: the trusted header (only from `trustedHeader.fromCidrs`), then `X-API-Key`, then
 * `Authorization: Bearer` (an API key when the table has it; else a JWT when `jwt` is set; else
 * `unknown-key`), then anonymous. A Bearer credential is read only when `apiKeys`/`apiKeysFile`
 * or `jwt` is configured; otherwise it is the upstream's business and passes untouched. Headers
 * are only read, never changed: credentials travel to the upstream as they came.
 *
 * @example
 * ```ts
 * const identity = await createIdentityResolver(parseIdentityConfig(raw.identity), {
 *   baseDir: dirname(configFile),
 * });
 * const who = await identity.resolve({ headers: req.headers, remoteAddress: req.socket.remoteAddress });
 * if (!who.ok) send401(who);
 * ```
 */
export async function createIdentityResolver(
  config: IdentityConfig,
  deps: IdentityResolverDeps = {},
): Promise<IdentityResolver> {
  const read = deps.readFile ?? ((path: string) => readFile(path, 'utf8'));
  const pathOf = (file: string): string =>
    isAbsolute(file) ? file : resolvePath(deps.baseDir ?? process.cwd(), file);
  const fromFile =
    config.apiKeysFile === undefined ? [] : await loadApiKeysFile(pathOf(config.apiKeysFile), read);
  const keyed = config.apiKeysFile !== undefined || config.apiKeys.length > 0;
  const keys = createApiKeyTable(mergeApiKeys(config.apiKeys, fromFile, 'identity'));
  const verifyJwt =
    config.jwt === undefined ? undefined : await jwtVerifierOf(config, read, pathOf, deps);
  const trustedSources = createCidrSet(config.trustedHeader?.fromCidrs ?? []);
  const trustedProxies = createCidrSet(config.trustedProxies);
  const addressKey = createAddressKey({ ipv6PrefixLength: config.ipv6PrefixLength });
  const resolver = { keys, keyed, verifyJwt, trustedSources, trustedProxies, addressKey, config };
  return {
    async resolve(request) {
      try {
        const result = await resolveIdentity(resolver, request);
        const unbelieved = unbelievedHeaders(resolver, request);
        return result.ok && unbelieved.length > 0
          ? { ...result, unbelievedHeaders: unbelieved }
          : result;
      } catch (error) {
        // Nothing above should throw; if it does, the request still gets an answer, not a crash.
        deps.onInternalError?.(error);
        return { ok: false, reason: 'bad-token', message: 'the credential could not be read' };
      }
    },
    close() {
      // jose's remote key set holds no socket between fetches; nothing to release yet.
    },
  };
}

async function jwtVerifierOf(
  config: IdentityConfig,
  read: TextReader,
  pathOf: (file: string) => string,
  deps: IdentityResolverDeps,
): Promise<JwtVerifier> {
  const jwt = config.jwt as NonNullable<IdentityConfig['jwt']>;
  const nowMs = deps.nowMs === undefined ? {} : { nowMs: deps.nowMs };
  if (jwt.jwksFile === undefined) return createJwtVerifier(jwt, nowMs);
  const path = pathOf(jwt.jwksFile);
  let jwks: unknown;
  try {
    jwks = JSON.parse(await read(path));
  } catch (error) {
    throw new RangeError(
      `identity.jwt.jwksFile: cannot read ${path}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  return createJwtVerifier({ ...jwt, jwksFile: path }, { ...nowMs, jwks });
}

interface ResolverParts {
  readonly keys: ApiKeyTable;
  readonly keyed: boolean;
  readonly verifyJwt: JwtVerifier | undefined;
  readonly trustedSources: ReturnType<typeof createCidrSet>;
  readonly trustedProxies: ReturnType<typeof createCidrSet>;
  readonly addressKey: (address: string | undefined) => string;
  readonly config: IdentityConfig;
}

/** The trusted header's names the request carries from outside the trusted sources. */
function unbelievedHeaders(parts: ResolverParts, request: IdentityRequest): string[] {
  const trusted = parts.config.trustedHeader;
  if (trusted === undefined || parts.trustedSources.contains(request.remoteAddress)) return [];
  const names = trusted.tierName === undefined ? [trusted.name] : [trusted.name, trusted.tierName];
  return names.filter((name) => request.headers[name] !== undefined);
}

async function resolveIdentity(
  parts: ResolverParts,
  request: IdentityRequest,
): Promise<IdentityResult> {
  const { config } = parts;
  const headers = request.headers;
  const trusted = config.trustedHeader;
  if (trusted !== undefined && parts.trustedSources.contains(request.remoteAddress)) {
    const value = single(headers[trusted.name]);
    if (value === AMBIGUOUS) return ambiguous(trusted.name);
    const name = value?.trim();
    if (name !== undefined && name !== '') {
      if (name.length > MAX_TRUSTED_VALUE_LENGTH || hasControlCharacter(name)) {
        return {
          ok: false,
          reason: 'bad-trusted-header',
          message: `the ${trusted.name} header is not a caller name`,
        };
      }
      const tier = trusted.tierName === undefined ? undefined : single(headers[trusted.tierName]);
      const tierName = typeof tier === 'string' ? tier.trim() : '';
      return tierName === '' || tierName.length > MAX_TRUSTED_VALUE_LENGTH
        ? { ok: true, caller: authenticatedCallerKey(name), via: 'trustedHeader' }
        : { ok: true, caller: authenticatedCallerKey(name), tier: tierName, via: 'trustedHeader' };
    }
  }
  if (parts.keyed) {
    const apiKey = single(headers[API_KEY_HEADER]);
    if (apiKey === AMBIGUOUS) return ambiguous('X-API-Key');
    if (apiKey !== undefined) return byApiKey(parts, apiKey.trim());
  }
  if (parts.keyed || parts.verifyJwt !== undefined) {
    const authorization = single(headers.authorization);
    if (authorization === AMBIGUOUS) return ambiguous('Authorization');
    const bearer = authorization === undefined ? undefined : bearerOf(authorization);
    if (bearer !== undefined) {
      if (parts.keyed) {
        const owner = parts.keys.find(bearer);
        if (owner !== undefined) return ownedBy(owner, 'apiKey');
      }
      if (parts.verifyJwt !== undefined && (!parts.keyed || looksLikeJwt(bearer))) {
        const outcome = await parts.verifyJwt(bearer);
        return outcome.ok ? ownedBy(outcome, 'jwt') : outcome;
      }
      return unknownKey();
    }
  }
  if (config.anonymous === 'refuse') {
    return {
      ok: false,
      reason: 'missing-credential',
      message: 'a credential is required: send an API key or a bearer token',
    };
  }
  const address = clientAddress(
    request.remoteAddress,
    forwardedFor(headers[FORWARDED_FOR]),
    parts.trustedProxies,
  );
  return { ok: true, caller: parts.addressKey(address), via: 'address' };
}

function byApiKey(parts: ResolverParts, key: string): IdentityResult {
  const owner = key === '' ? undefined : parts.keys.find(key);
  return owner === undefined ? unknownKey() : ownedBy(owner, 'apiKey');
}

function ownedBy(
  owner: { readonly caller: string; readonly tier?: string },
  via: IdentitySource,
): IdentityResult {
  const caller = authenticatedCallerKey(owner.caller);
  return owner.tier === undefined
    ? { ok: true, caller, via }
    : { ok: true, caller, tier: owner.tier, via };
}

function unknownKey(): IdentityFailure {
  return { ok: false, reason: 'unknown-key', message: 'the API key is not known' };
}

function ambiguous(header: string): IdentityFailure {
  return {
    ok: false,
    reason: 'ambiguous-credential',
    message: `the request carries more than one ${header} header`,
  };
}

const AMBIGUOUS = Symbol('ambiguous');

/** Whether text holds a control character (C0 or DEL), which no caller name has. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** A header's one value; {@link AMBIGUOUS} when several different ones came. */
function single(
  value: string | readonly string[] | undefined,
): string | undefined | typeof AMBIGUOUS {
  if (value === undefined || typeof value === 'string') return value;
  const distinct = new Set(value);
  if (distinct.size > 1) return AMBIGUOUS;
  return value[0];
}

/** The credential of `Bearer <credential>` (scheme case-insensitive); undefined for other schemes. */
function bearerOf(authorization: string): string | undefined {
  const match = /^\s*bearer[ \t]+(\S+)\s*$/i.exec(authorization);
  if (match !== null) return match[1];
  // `Bearer` with nothing (or junk) after it is still a Bearer credential, and a bad one.
  return /^\s*bearer(\s|$)/i.test(authorization) ? '' : undefined;
}

function forwardedFor(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  return value.length === 0 ? undefined : value.join(',');
}
