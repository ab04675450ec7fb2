/**
 * @module identity-config
 * The gateway config's `identity:` section: its zod schema, its types, and `parseIdentityConfig`
 * (every bad field named by its path).
 */

import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Signature algorithms a JWT may use by default: the asymmetric JWS ones. Shared-secret HMAC
 * (`HS*`) is left out: a JWKS is public, so an `oct` key in it would let anyone sign.
 *
 * @example
 * ```ts
 * DEFAULT_JWT_ALGORITHMS.includes('RS256'); // true
 * ```
 */
export const DEFAULT_JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

/** Shortest API key accepted in clear (a shorter one is guessable). */
export const MIN_API_KEY_LENGTH = 16;

/**
 * One API key: given in clear (`key`) or as the lower-case hex SHA-256 of the key (`sha256`), so
 * the file need not hold the key itself.
 */
export type ApiKeyEntry =
  | { readonly key: string; readonly caller: string; readonly tier?: string }
  | { readonly sha256: string; readonly caller: string; readonly tier?: string };

/** JWT bearer tokens: where the keys are, what the token must say, which claims name the caller. */
export interface JwtConfig {
  /** JWKS over HTTPS (plain HTTP only on a loopback host). Exactly one of this and `jwksFile`. */
  readonly jwksUrl?: string;
  /** JWKS in a local JSON file. */
  readonly jwksFile?: string;
  readonly issuer: string;
  readonly audience: string | readonly string[];
  /** Claim naming the caller; default `sub`. */
  readonly callerClaim: string;
  /** Claim naming the caller's tier, when tokens carry one. */
  readonly tierClaim?: string;
  /** Accepted `alg` values; default {@link DEFAULT_JWT_ALGORITHMS}. */
  readonly algorithms: readonly string[];
  /** Leeway on `exp` and `nbf`, seconds; default 0. */
  readonly clockToleranceSeconds: number;
}

/** A caller name set by an outer proxy, believed only from its addresses. */
export interface TrustedHeaderConfig {
  /** Header name (lower case). */
  readonly name: string;
  /** Header naming the caller's tier (lower case), optional. */
  readonly tierName?: string;
  /** CIDRs the connection must come from for the header to count. */
  readonly fromCidrs: readonly string[];
}

/** The `identity:` section, validated, with defaults filled in. */
export interface IdentityConfig {
  /** `allow` (default): callers without a credential are keyed by address; `refuse`: 401. */
  readonly anonymous: 'allow' | 'refuse';
  readonly apiKeys: readonly ApiKeyEntry[];
  readonly apiKeysFile?: string;
  readonly jwt?: JwtConfig;
  readonly trustedHeader?: TrustedHeaderConfig;
  /** Proxies whose `X-Forwarded-For` is believed (CIDRs). */
  readonly trustedProxies: readonly string[];
  /** IPv6 callers sharing this many leading bits are one caller; default 64. */
  readonly ipv6PrefixLength: number;
}

type IssueLike = { readonly input?: unknown };

/** An error message that says "is required" when the field is missing, `text` otherwise. */
function says(text: string): { error: (issue: IssueLike) => string } {
  return { error: (issue) => (issue.input === undefined ? 'is required' : text) };
}

const nonEmpty = z
  .string(says('must be a non-empty string'))
  .trim()
  .min(1, says('must be a non-empty string'));

/** Header field names (RFC 9110 tokens). */
const headerName = z
  .string(says('must be an HTTP header name'))
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, says('must be an HTTP header name'))
  .transform((name) => name.toLowerCase());

/**
 * Whether `text` is `address/prefix` or a bare address, as `node:net` reads addresses.
 *
 * @example
 * ```ts
 * isCidr('10.0.0.0/8'); // true
 * isCidr('10.0.0.0/33'); // false
 * ```
 */
export function isCidr(text: string): boolean {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const version = isIP(address);
  if (version === 0 || address.includes('%')) return false;
  if (slash < 0) return true;
  const length = text.slice(slash + 1);
  return /^\d{1,3}$/.test(length) && Number(length) <= (version === 4 ? 32 : 128);
}

const cidr = z
  .string(says('must be an IP address or CIDR range, e.g. 10.0.0.0/8'))
  .trim()
  .refine(isCidr, says('must be an IP address or CIDR range, e.g. 10.0.0.0/8'));
const cidrs = z
  .array(cidr, says('must be a list of CIDR ranges'))
  .min(1, says('must list at least one CIDR range'));

const apiKeyEntry = z
  .strictObject(
    {
      key: z
        .string(says('must be a string'))
        .min(MIN_API_KEY_LENGTH, says(`must be at least ${MIN_API_KEY_LENGTH} characters`))
        .regex(/^[\x21-\x7e]+$/, says('must be printable ASCII without spaces'))
        .optional(),
      sha256: z
        .string(says('must be 64 hex characters'))
        .regex(/^[0-9a-fA-F]{64}$/, says('must be 64 hex characters'))
        .transform((hex) => hex.toLowerCase())
        .optional(),
      caller: nonEmpty,
      tier: nonEmpty.optional(),
    },
    says('must be an object with key (or sha256) and caller'),
  )
  .superRefine((entry, ctx) => {
    if (entry.key !== undefined && entry.sha256 !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['sha256'], message: 'give key or sha256, not both' });
    } else if (entry.key === undefined && entry.sha256 === undefined) {
      ctx.addIssue({ code: 'custom', path: ['key'], message: 'is required (or sha256)' });
    }
  });

/**
 * The list of API keys (`apiKeys:` inline, or the content of `apiKeysFile`).
 */
export const API_KEYS_SCHEMA = z.array(apiKeyEntry, says('must be a list of API keys'));

const jwt = z
  .strictObject(
    {
      jwksUrl: z
        .url(says('must be an https:// URL (http:// only on a loopback host)'))
        .refine(isAllowedJwksUrl, says('must be an https:// URL (http:// only on a loopback host)'))
        .optional(),
      jwksFile: nonEmpty.optional(),
      issuer: nonEmpty,
      audience: z.union([nonEmpty, z.array(nonEmpty).min(1)], says('must be a string or a list')),
      callerClaim: nonEmpty.default('sub'),
      tierClaim: nonEmpty.optional(),
      algorithms: z
        .array(
          z.enum(
            DEFAULT_JWT_ALGORITHMS,
            says(`must be one of ${DEFAULT_JWT_ALGORITHMS.join(', ')}`),
          ),
          says('must be a list of algorithms'),
        )
        .min(1, says('must list at least one algorithm'))
        .default([...DEFAULT_JWT_ALGORITHMS]),
      clockToleranceSeconds: z
        .int(says('must be an integer from 0 to 300'))
        .min(0, says('must be an integer from 0 to 300'))
        .max(300, says('must be an integer from 0 to 300'))
        .default(0),
    },
    says('must be an object'),
  )
  .superRefine((value, ctx) => {
    if ((value.jwksUrl === undefined) === (value.jwksFile === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['jwksUrl'],
        message: 'give jwksUrl or jwksFile (one)',
      });
    }
  });

const trustedHeader = z.strictObject(
  { name: headerName, tierName: headerName.optional(), fromCidrs: cidrs },
  says('must be an object with name and fromCidrs'),
);

/**
 * The zod schema of the `identity:` section (the value under that key).
 */
export const IDENTITY_CONFIG_SCHEMA = z.strictObject(
  {
    anonymous: z.enum(['allow', 'refuse'], says('must be "allow" or "refuse"')).default('allow'),
    apiKeys: API_KEYS_SCHEMA.default([]),
    apiKeysFile: nonEmpty.optional(),
    jwt: jwt.optional(),
    trustedHeader: trustedHeader.optional(),
    trustedProxies: z.array(cidr, says('must be a list of CIDR ranges')).default([]),
    ipv6PrefixLength: z
      .int(says('must be an integer from 1 to 128'))
      .min(1, says('must be an integer from 1 to 128'))
      .max(128, says('must be an integer from 1 to 128'))
      .default(64),
  },
  says('must be an object'),
);

/** Whether a JWKS URL is https, or http to a loopback host (tests, a sidecar's own issuer). */
function isAllowedJwksUrl(text: string): boolean {
  const url = new URL(text);
  if (url.protocol === 'https:') return true;
  if (url.protocol !== 'http:') return false;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * A field path as a user reads it: `identity.apiKeys[2].sha256`.
 *
 * @example
 * ```ts
 * formatIdentityPath('identity', ['apiKeys', 2, 'sha256']); // 'identity.apiKeys[2].sha256'
 * ```
 */
export function formatIdentityPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * Every problem of a failed parse, one per bad field, each starting with its path.
 *
 * @example
 * ```ts
 * describeIssues('identity', result.error.issues); // ['identity.anonymous: must be "allow" or "refuse"']
 * ```
 */
export function describeIssues(prefix: string, issues: readonly z.core.$ZodIssue[]): string[] {
  const out = issues.map((issue) => {
    const at = formatIdentityPath(prefix, issue.path);
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => `"${k}"`).join(', ');
      return `${at === '' ? '' : `${at}: `}unknown field${issue.keys.length > 1 ? 's' : ''} ${keys}`;
    }
    return at === '' ? issue.message : `${at}: ${issue.message}`;
  });
  return [...new Set(out)];
}

/**
 * Joins problems into one line.
 *
 * @example
 * ```ts
 * joinProblems(['a: x', 'b: y']); // '2 problems: a: x; b: y'
 * ```
 */
export function joinProblems(problems: readonly string[]): string {
  return problems.length <= 1
    ? (problems[0] ?? 'invalid')
    : `${problems.length} problems: ${problems.join('; ')}`;
}

/** Drops `undefined` members, for `exactOptionalPropertyTypes`. */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * Validates the `identity:` section of a gateway config (the value as parsed from YAML or JSON;
 * `undefined` gives the defaults: anonymous callers keyed by address). Throws a `RangeError`
 * whose one-line message names every bad field by its path under `pathPrefix`.
 *
 * @example
 * ```ts
 * parseIdentityConfig({ apiKeys: [{ sha256: 'abc', caller: 'a' }] });
 * // RangeError: identity.apiKeys[0].sha256: must be 64 hex characters
 * ```
 */
export function parseIdentityConfig(raw: unknown, pathPrefix = 'identity'): IdentityConfig {
  const result = IDENTITY_CONFIG_SCHEMA.safeParse(raw ?? {});
  if (!result.success) {
    const problems = [
      ...new Set([
        ...describeIssues(pathPrefix, result.error.issues),
        ...eitherOrProblems(raw, pathPrefix),
      ]),
    ];
    throw new RangeError(joinProblems(problems));
  }
  const data = result.data;
  const duplicates = duplicateKeyProblems(data.apiKeys, `${pathPrefix}.apiKeys`);
  if (duplicates.length > 0) throw new RangeError(joinProblems(duplicates));
  return defined({
    anonymous: data.anonymous,
    apiKeys: data.apiKeys.map(toApiKeyEntry),
    apiKeysFile: data.apiKeysFile,
    jwt: data.jwt === undefined ? undefined : defined({ ...data.jwt }),
    trustedHeader:
      data.trustedHeader === undefined ? undefined : defined({ ...data.trustedHeader }),
    trustedProxies: data.trustedProxies,
    ipv6PrefixLength: data.ipv6PrefixLength,
  }) as IdentityConfig;
}

/**
 * The "one of two fields" rules (`key`/`sha256`, `jwksUrl`/`jwksFile`) checked on the raw value:
 * zod runs an object's refinements only when its fields passed, and every problem is named at once.
 */
function eitherOrProblems(raw: unknown, pathPrefix: string): string[] {
  if (!isRecord(raw)) return [];
  const problems: string[] = [];
  const jwt = raw.jwt;
  if (isRecord(jwt) && (jwt.jwksUrl === undefined) === (jwt.jwksFile === undefined)) {
    problems.push(`${pathPrefix}.jwt.jwksUrl: give jwksUrl or jwksFile (one)`);
  }
  if (Array.isArray(raw.apiKeys)) {
    raw.apiKeys.forEach((entry: unknown, i) => {
      if (!isRecord(entry)) return;
      if (entry.key !== undefined && entry.sha256 !== undefined) {
        problems.push(`${pathPrefix}.apiKeys[${i}].sha256: give key or sha256, not both`);
      } else if (entry.key === undefined && entry.sha256 === undefined) {
        problems.push(`${pathPrefix}.apiKeys[${i}].key: is required (or sha256)`);
      }
    });
  }
  return problems;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A parsed entry as its public type (exactly one of key / sha256). */
export function toApiKeyEntry(entry: z.output<typeof apiKeyEntry>): ApiKeyEntry {
  return defined({ ...entry }) as ApiKeyEntry;
}

/**
 * `listPath[j]: the same key as listPath[i]` for each repeated key (clear or hashed), never
 * echoing a key. Keys are compared by their SHA-256.
 */
export function duplicateKeyProblems(
  entries: readonly { key?: string | undefined; sha256?: string | undefined }[],
  listPath: string,
  digestOf: (key: string) => string = sha256HexOf,
): string[] {
  const seen = new Map<string, number>();
  const problems: string[] = [];
  entries.forEach((entry, i) => {
    const digest = entry.sha256 ?? (entry.key === undefined ? undefined : digestOf(entry.key));
    if (digest === undefined) return;
    const first = seen.get(digest);
    if (first === undefined) seen.set(digest, i);
    else problems.push(`${listPath}[${i}]: the same key as ${listPath}[${first}]`);
  });
  return problems;
}

/**
 * Lower-case hex SHA-256 of a key's UTF-8 bytes: what `sha256:` holds
 * (`printf %s "$KEY" | sha256sum`).
 *
 * @example
 * ```ts
 * sha256HexOf('abc'); // 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
 * ```
 */
export function sha256HexOf(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}
