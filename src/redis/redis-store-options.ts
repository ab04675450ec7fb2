/**
 * @module redis-store-options
 * What a `RedisStore` is configured with and reports: options, failure policies and modes, logger,
 * counters.
 */

import type { Clock } from '../core/clock.js';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { HoldOptions, Policy } from '../core/policy.js';
import type { RedisLike } from './redis-like.js';

/**
 * What a `RedisStore` does when Redis fails or is slower than `timeoutMs`:
 * `fail-open` admits, `fail-closed` rejects as overload (503, `AGENT_OVERLOADED`, policy
 * `store-unavailable`, 1 s), `insurance` decides with an in-memory store whose limits are divided
 * by `replicas`.
 */
export const FAILURE_POLICIES = {
  failOpen: 'fail-open',
  failClosed: 'fail-closed',
  insurance: 'insurance',
} as const;

/**
 * One of `FAILURE_POLICIES`: `fail-open`, `fail-closed` or `insurance`.
 */
export type FailurePolicy = (typeof FAILURE_POLICIES)[keyof typeof FAILURE_POLICIES];

/**
 * Who is answering: `redis`, or the failure policy while Redis is unavailable.
 */
export type RedisStoreMode = 'redis' | FailurePolicy;

/**
 * A switch between Redis and the failure policy.
 */
export interface ModeChangeEvent {
  readonly from: RedisStoreMode;
  readonly to: RedisStoreMode;
  /** The error that caused the switch, or `recovered`. */
  readonly reason: string;
  /** Wall-clock time of the switch, ms since the Unix epoch. */
  readonly atMs: number;
}

/**
 * Where the store writes its one-line notices (mode changes, script reloads, failed releases).
 *
 * @example
 * ```ts
 * const logger: RedisStoreLogger = { warn: (m, f) => log.warn(f, m), info: (m, f) => log.info(f, m) };
 * ```
 */
export interface RedisStoreLogger {
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

/**
 * Options of {@link RedisStore}.
 *
 * @example
 * ```ts
 * const options: RedisStoreOptions = {
 *   client: new Redis(url, RECOMMENDED_IOREDIS_OPTIONS),
 *   policies: [{ name: 'per-caller', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 }],
 *   onError: 'insurance',
 *   replicas: 4,
 * };
 * ```
 */
export interface RedisStoreOptions {
  /** The Redis client (ioredis `Redis` or `Cluster`, or any {@link RedisLike}). */
  readonly client: RedisLike;
  /** Policies, raw (validated here) or already compiled. */
  readonly policies: readonly Policy[] | CompiledPolicySet;
  /** Hold options when `policies` is raw. */
  readonly holds?: HoldOptions;
  /** The declared failure policy (required: there is no silent default). */
  readonly onError: FailurePolicy;
  /** Longest wait for one store call before the failure policy answers, ms; default 50. */
  readonly timeoutMs?: number;
  /** Agent replicas sharing this Redis; the insurance limiter divides limits by it. Default 1. */
  readonly replicas?: number;
  /** Prefix of every key; must not contain `{` or `}`. Default `a2arl:`. */
  readonly keyPrefix?: string;
  /**
   * Time source. Default: Redis `TIME` inside the script (one clock for all replicas). A given
   * clock (tests, simulation) is read here and sent with each call; Redis TTLs still run on real
   * time, so raise `keyTtlPaddingMs` to cover how far test time may lag real time.
   */
  readonly clock?: Clock;
  /** How long every key outlives the moment its state stops mattering, ms; default 1,000. */
  readonly keyTtlPaddingMs?: number;
  /** While degraded, one call per this interval tries Redis again, ms; default 1,000. */
  readonly retryIntervalMs?: number;
  /** Group keys by hash tag and split cross-slot requests; default `client.isCluster === true`. */
  readonly cluster?: boolean;
  /** Notices; default one `console.warn` / `console.info` line each. `false` silences them. */
  readonly logger?: RedisStoreLogger | false;
  /** Called on every switch between Redis and the failure policy. */
  readonly onModeChange?: (event: ModeChangeEvent) => void;
  /**
   * Coalesce single-slot decisions made in the same event-loop turn into one script call that
   * decides them in arrival order at one instant (one `TIME`, one write, one reply). Default
   * true; ignored on a Cluster.
   */
  readonly coalesce?: boolean;
  /** Call `client.quit()` on `close()`; default false (the caller owns the client). */
  readonly quitClientOnClose?: boolean;
  /**
   * How often the store checks whether another store on this prefix published a newer policy
   * set (one small script call), ms; default 500. `false`: never follow published sets.
   */
  readonly policyPollIntervalMs?: number | false;
}

/**
 * Counters for metrics (prom-client wiring lives in the server layer).
 */
export interface RedisStoreStats {
  /** Who answers decisions now. */
  readonly mode: RedisStoreMode;
  /** Decisions asked for. */
  readonly decisions: number;
  /** Decisions made by Redis. */
  readonly redisDecisions: number;
  /** Decisions answered by the failure policy. */
  readonly fallbackDecisions: number;
  /** Decisions that needed the two-phase cross-slot protocol. */
  readonly crossSlotDecisions: number;
  /** Decisions sent coalesced with others in one script call. */
  readonly coalescedDecisions: number;
  /** Script calls that carried coalesced decisions. */
  readonly batches: number;
  /** Store calls that failed with an error (timeouts not included). */
  readonly errors: number;
  /** Store calls that took longer than `timeoutMs`. */
  readonly timeouts: number;
  /** Switches from Redis to the failure policy. */
  readonly degradations: number;
  /** Switches back to Redis. */
  readonly recoveries: number;
  /** NOSCRIPT replies answered by re-sending the script. */
  readonly scriptLoads: number;
  /** When the current degradation began (ms since the Unix epoch), if degraded. */
  readonly degradedSinceMs: number | undefined;
  /** The version (content hash, `policySetVersion`) of the policy set decisions use now. */
  readonly policySetVersion: string;
  /** The newest policy-set generation published on this prefix that this store has seen (0: none). */
  readonly policyGeneration: number;
}

const consoleLogger: RedisStoreLogger = {
  warn: (message, fields) => console.warn(`[a2a-ratelimit] ${message}`, fields ?? ''),
  info: (message, fields) => console.info(`[a2a-ratelimit] ${message}`, fields ?? ''),
};

const silentLogger: RedisStoreLogger = { warn: () => {}, info: () => {} };

/**
 * The logger of a `logger` option: default one console line each, `false` silent.
 *
 * @internal
 */
export function loggerOf(option: RedisStoreLogger | false | undefined): RedisStoreLogger {
  return option === false ? silentLogger : (option ?? consoleLogger);
}

/**
 * Writes one notice; a failing logger must not fail a decision.
 *
 * @internal
 */
export function notify(
  logger: RedisStoreLogger,
  level: 'info' | 'warn',
  message: string,
  fields: Readonly<Record<string, unknown>> | ModeChangeEvent,
): void {
  try {
    logger[level](message, { ...fields });
  } catch {
    // Swallowed: see above.
  }
}

/**
 * `Error: message` of any thrown value, for notices and mode changes.
 *
 * @internal
 */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * A positive duration option in ms, or `fallback` when not given.
 *
 * @internal
 */
export function positiveMs(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(value > 0 && Number.isFinite(value))) {
    throw new RangeError(`RedisStore: ${name} must be a positive number of ms, got ${value}`);
  }
  return value;
}
