/**
 * @module redis-like
 * `RedisLike`: the two commands `RedisStore` needs of a client, and the ioredis options that suit a
 * limiter.
 */

/**
 * A Redis client as `RedisStore` sees it: `EVALSHA` and `EVAL` with ioredis's argument order
 * (`numKeys`, then keys, then arguments), resolving to the script's reply (integers as numbers,
 * bulk strings as strings, arrays as arrays) and rejecting with an `Error` whose message starts
 * with `NOSCRIPT` when the script is not cached on the node. A cluster client must route by the
 * first key (every key of one call shares a hash tag).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const client: RedisLike = new Redis('redis://127.0.0.1:6379', RECOMMENDED_IOREDIS_OPTIONS);
 * // node-redis v4+:
 * const adapter: RedisLike = {
 *   evalsha: (sha1, numKeys, ...rest) =>
 *     nodeRedis.evalSha(sha1, { keys: rest.slice(0, numKeys).map(String), arguments: rest.slice(numKeys).map(String) }),
 *   eval: (script, numKeys, ...rest) =>
 *     nodeRedis.eval(script, { keys: rest.slice(0, numKeys).map(String), arguments: rest.slice(numKeys).map(String) }),
 * };
 * ```
 */
export interface RedisLike {
  /** `EVALSHA sha1 numKeys key… arg…`. */
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  /** `EVAL script numKeys key… arg…` (also caches the script on that node). */
  eval(script: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  /** ioredis sets this on `Cluster` clients; `RedisStore` then groups keys by hash tag. */
  readonly isCluster?: boolean;
  /** Closes the connection; used only with `quitClientOnClose`. */
  quit?(): Promise<unknown>;
}

/**
 * ioredis options for a limiter's client: commands fail at once while disconnected (the store's
 * failure policy answers) instead of waiting in the offline queue and charging limits long after
 * their request was answered, and in-flight commands are not re-sent after a reconnect. ioredis
 * still reconnects on its own.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', RECOMMENDED_IOREDIS_OPTIONS);
 * ```
 */
export const RECOMMENDED_IOREDIS_OPTIONS = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  connectTimeout: 2_000,
} as const;
