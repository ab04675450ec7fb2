/**
 * @module api-key-table
 * API keys by their SHA-256: the table from `apiKeys:` and `apiKeysFile`, and a presented key found
 * in constant time.
 */

import { hash, timingSafeEqual } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import {
  API_KEYS_SCHEMA,
  type ApiKeyEntry,
  describeIssues,
  duplicateKeyProblems,
  joinProblems,
  toApiKeyEntry,
} from './identity-config.js';

/** Who an API key stands for. */
export interface ApiKeyOwner {
  readonly caller: string;
  readonly tier?: string;
}

interface TableRow {
  readonly digest: Buffer;
  /** Built once: every find of this key hands out the same (read-only) owner. */
  readonly owner: ApiKeyOwner;
}

/**
 * API keys held only as SHA-256 digests. A presented key is hashed (so its length and content no
 * longer steer any comparison), the digest's row found by its hex text, and the 32 bytes then
 * compared with `crypto.timingSafeEqual`: no string comparison ever runs over the key itself, so
 * timing cannot tell which key prefix matched.
 */
export interface ApiKeyTable {
  /** How many keys the table holds. */
  readonly size: number;
  /** The owner of `presented`, or undefined for an unknown key. */
  find(presented: string): ApiKeyOwner | undefined;
}

/**
 * Builds a table from validated entries (clear keys are hashed here and not kept).
 *
 * @example
 * ```ts
 * const table = createApiKeyTable([{ key: 'k-0123456789abcdef', caller: 'alice', tier: 'gold' }]);
 * table.find('k-0123456789abcdef'); // { caller: 'alice', tier: 'gold' }
 * table.find('k-0123456789abcdeX'); // undefined
 * ```
 */
export function createApiKeyTable(entries: readonly ApiKeyEntry[]): ApiKeyTable {
  const rows = new Map<string, TableRow>();
  for (const entry of entries) {
    const digest = 'sha256' in entry ? Buffer.from(entry.sha256, 'hex') : sha256Digest(entry.key);
    const owner: ApiKeyOwner = Object.freeze(
      entry.tier === undefined
        ? { caller: entry.caller }
        : { caller: entry.caller, tier: entry.tier },
    );
    const row: TableRow = { digest, owner };
    rows.set(digest.toString('hex'), row);
  }
  return {
    size: rows.size,
    find(presented) {
      const digest = sha256Digest(presented);
      const row = rows.get(digest.toString('hex'));
      // The digests are fixed-length; the second check costs the same whether or not it matches.
      if (row === undefined || !timingSafeEqual(row.digest, digest)) return undefined;
      return row.owner;
    },
  };
}

function sha256Digest(key: string): Buffer {
  // One-shot (no Hash object per request); the key's UTF-8 bytes, as before.
  return hash('sha256', key, 'buffer');
}

/**
 * Reads the text of a file (a path as given in the config).
 */
export type TextReader = (path: string) => Promise<string>;

/**
 * Reads and validates an API keys file: a YAML or JSON list of `{ key | sha256, caller, tier? }`
 * (or an object with that list under `apiKeys`). Throws a `RangeError` naming the file and every
 * bad field (`keys.yaml: [2].sha256: must be 64 hex characters`); a key is never echoed.
 *
 * @example
 * ```ts
 * await loadApiKeysFile('/etc/gateway/keys.yaml', (p) => readFile(p, 'utf8'));
 * // [{ sha256: '…', caller: 'alice', tier: 'gold' }]
 * ```
 */
export async function loadApiKeysFile(path: string, read: TextReader): Promise<ApiKeyEntry[]> {
  let text: string;
  try {
    text = await read(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new RangeError(
      `cannot read API keys file ${path}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
      { cause: error },
    );
  }
  let value: unknown;
  try {
    // YAML 1.2 reads JSON too.
    value = parseYaml(text);
  } catch (error) {
    throw new RangeError(`${path}: not valid YAML or JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const nested =
    value !== null && typeof value === 'object' && !Array.isArray(value) && 'apiKeys' in value;
  const list = nested ? (value as { apiKeys: unknown }).apiKeys : value;
  const prefix = nested ? 'apiKeys' : '';
  const result = API_KEYS_SCHEMA.safeParse(list ?? []);
  if (!result.success) {
    throw new RangeError(`${path}: ${joinProblems(describeIssues(prefix, result.error.issues))}`);
  }
  const duplicates = duplicateKeyProblems(result.data, prefix);
  if (duplicates.length > 0) throw new RangeError(`${path}: ${joinProblems(duplicates)}`);
  return result.data.map(toApiKeyEntry);
}

/**
 * The keys of `inline` and `fromFile` together; a `RangeError` when one key appears in both
 * (`identity.apiKeysFile[0]: the same key as identity.apiKeys[3]`).
 *
 * @example
 * ```ts
 * mergeApiKeys(config.apiKeys, await loadApiKeysFile(file, read), 'identity');
 * ```
 */
export function mergeApiKeys(
  inline: readonly ApiKeyEntry[],
  fromFile: readonly ApiKeyEntry[],
  pathPrefix: string,
): ApiKeyEntry[] {
  const inlineDigests = new Map<string, number>();
  inline.forEach((entry, i) => {
    inlineDigests.set(digestHexOf(entry), i);
  });
  const problems: string[] = [];
  fromFile.forEach((entry, j) => {
    const i = inlineDigests.get(digestHexOf(entry));
    if (i !== undefined) {
      problems.push(`${pathPrefix}.apiKeysFile[${j}]: the same key as ${pathPrefix}.apiKeys[${i}]`);
    }
  });
  if (problems.length > 0) throw new RangeError(joinProblems(problems));
  return [...inline, ...fromFile];
}

function digestHexOf(entry: ApiKeyEntry): string {
  return 'sha256' in entry ? entry.sha256 : sha256Digest(entry.key).toString('hex');
}
