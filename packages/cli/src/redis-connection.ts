/**
 * @module redis-connection
 * `--redis` and `--redis-on-error` for `serve` and `gateway`: the failure mode's parse and the
 * connection to a `RedisStore`.
 */

import type { HoldOptions, Policy, Store } from 'a2a-ratelimit';
import { CliError } from './cli-error.js';

/**
 * What `--redis-on-error` accepts (the `RedisStore` failure policies).
 */
export type RedisFailureMode = 'fail-open' | 'fail-closed' | 'insurance';

/**
 * Parses `--redis-on-error` (default `insurance`).
 *
 * @example
 * ```ts
 * parseFailureMode('fail-open'); // 'fail-open'
 * ```
 */
export function parseFailureMode(value: unknown): RedisFailureMode {
  if (value === undefined) return 'insurance';
  const text = String(value);
  if (text === 'fail-open' || text === 'fail-closed' || text === 'insurance') return text;
  throw new CliError(`--redis-on-error must be fail-open, fail-closed or insurance, got "${text}"`);
}

/**
 * Connects to Redis (`--redis`) and returns a `RedisStore` for `policies` (shared by `serve` and
 * `gateway`); a `CliError` when ioredis is missing or Redis cannot be reached.
 *
 * @example
 * ```ts
 * const store = await connectRedis('redis://127.0.0.1:6379', policies, undefined, 'insurance', undefined);
 * ```
 */
export async function connectRedis(
  url: string,
  policies: readonly Policy[],
  holds: HoldOptions | undefined,
  onError: RedisFailureMode,
  keyPrefix: string | undefined,
  timeoutMs?: number,
): Promise<Store> {
  let Redis: typeof import('ioredis')['Redis'];
  try {
    ({ Redis } = await import('ioredis'));
  } catch {
    throw new CliError('--redis needs the "ioredis" package: npm install ioredis');
  }
  let redis: typeof import('a2a-ratelimit/redis');
  try {
    redis = await import('a2a-ratelimit/redis');
  } catch (error) {
    throw new CliError(`--redis is not available in this build (${(error as Error).message})`);
  }
  const client = new Redis(url, {
    ...redis.RECOMMENDED_IOREDIS_OPTIONS,
    lazyConnect: true,
    retryStrategy: (times: number) => (times > 20 ? null : Math.min(times * 200, 2_000)),
  });
  client.on('error', () => {
    // Connection errors are reported by connect() below and, later, by the store's own logger.
  });
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    client.disconnect();
    throw new CliError(`cannot reach Redis at ${url}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return new redis.RedisStore({
    client,
    policies,
    ...(holds === undefined ? {} : { holds }),
    onError,
    quitClientOnClose: true,
    ...(keyPrefix === undefined ? {} : { keyPrefix }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}
