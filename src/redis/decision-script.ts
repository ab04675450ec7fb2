/**
 * @module decision-script
 * The Lua script `RedisStore` runs: its modes, the header generated per policy set, and its
 * assembly.
 */

import { createHash } from 'node:crypto';
import type { CompiledPolicy, CompiledPolicySet } from '../core/compiled-policy.js';
import {
  LEASE_EWMA_ALPHA,
  LEASE_MIN_DELAY_MS,
  LEASE_OVERDUE_FRACTION,
} from '../core/lease-step.js';
import { LUA_DECISION, LUA_LEASES_AND_RECORDS } from './lua-files.js';

/**
 * Script modes (ARGV[1]).
 */
export const SCRIPT_MODES = {
  /** The whole decision over keys in one slot, reservation included. */
  decide: 'd',
  /** `decide` with an event-loop delay and/or leases to take (long argument form). */
  decideLong: 'D',
  /** Cross-slot phase 1: decide one slot's keys, never reserve, return undo codes. */
  tryGroup: 't',
  /** `tryGroup`, long argument form. */
  tryGroupLong: 'T',
  /** Several decisions that arrived together at one client (single node only). */
  batch: 'b',
  /** Cross-slot phase 2: give back what `tryGroup` charged (refund, restore hold, drop lease). */
  undo: 'u',
  /** Cross-slot phase 2: reserve the slot in the policy that set the delay. */
  reserve: 'r',
  /** Charge reported usage to a usage policy's key (may go into debt). */
  usage: 'g',
  /** Release one lease. */
  release: 'l',
  /** Renew one lease. */
  renew: 'n',
  /** Deduplication: set-if-absent (a pending record, owned), or take over an orphaned one. */
  remember: 'm',
  /** Deduplication: attach the task id. */
  recordTask: 'k',
  /** Deduplication: renew an owner's pending record. */
  renewPending: 'p',
  /** Deduplication: drop an owner's pending record. */
  forgetPending: 'x',
} as const;

/**
 * The body of the script: constant, the same for every policy set; the decision of
 * `core/decide.ts` transcribed line by line, so a Redis-backed limiter decides exactly as
 * `MemoryStore` does, in one round trip.
 *
 * Numbers: every timestamp is an integer number of µs (≈1.76e15, exact in a double). A Lua number
 * passed to `redis.call` is written exactly, but Lua's own `tostring` and `..` use `%.14g`, so
 * numbers built into strings are formatted explicitly (`%.0f` for integers, `%.17g` for the
 * fractional lease times in ms and the hold-time EWMA). Everything returned is an integer (Redis
 * truncates Lua numbers to integers in replies).
 *
 * ARGV and KEYS per mode:
 *
 * - every mode: `ARGV[1]` mode, `ARGV[2]` now in ms (`''` = Redis `TIME`).
 * - `d`, `t`: `ARGV[3]` hold key (`holdKeyOf`, `''` = none), `ARGV[4..]` policy
 *   index per step. `D`, `T` (long form): `ARGV[3]` hold key, `ARGV[4]` event-loop delay in ms
 *   (`''` = none), `ARGV[5]` lease id base, `ARGV[6..]` policy indices.
 *   `KEYS[i]` is step i's key (rate: the timestamp string; lease: the sorted set of leases by
 *   expiry); its companion hash is the same key with the role byte after the prefix changed
 *   from `k` to `h` — the same hash tag, so the same slot (rate: holds and no-shows; lease:
 *   acquired times and the EWMA).
 * - `b`: `ARGV[3..]` per decision: step count n, hold key, event-loop delay (`''` = none), lease id
 *   base (`''` = none), n policy indices; `KEYS` all decisions' keys back to back. Replies with
 *   one flat array: per decision, the length of its `d` reply, then that reply.
 * - `u`: `ARGV[3]` hold key, `ARGV[4]` lease id base, `ARGV[5..4+n]` policy indices, then one
 *   undo code per step.
 * - `r`: `ARGV[3]` hold key, `ARGV[4]` policy index, `KEYS[1]`.
 * - `l`, `n`: `ARGV[3]` policy index, `ARGV[4]` lease id, `KEYS[1]`.
 * - `m`: `ARGV[3]` TTL in ms, `ARGV[4]` pending TTL in ms (`''` = the TTL), `ARGV[5]` owner
 *   (`''` = none), `ARGV[6]` `'1'` to take over an orphaned record; `KEYS[1]` record key.
 * - `k`: `ARGV[3]` TTL in ms, `ARGV[4]` task id, `KEYS[1]` record key.
 * - `p`: `ARGV[3]` pending TTL in ms, `ARGV[4]` owner, `KEYS[1]` record key. `x`: `ARGV[3]`
 *   owner, `KEYS[1]` record key.
 */
export const DECISION_SCRIPT_BODY = `\n${LUA_DECISION}${LUA_LEASES_AND_RECORDS}`;

/** A JS number as a Lua literal that reads back as the same double. */
function luaNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return 'math.huge';
  if (!Number.isFinite(value)) throw new RangeError(`decision script: cannot encode ${value}`);
  return Number.isInteger(value) ? value.toFixed(0) : String(value);
}

/** One row of the policy table `P`: the compiled parameters the script needs. */
function luaPolicyRow(p: CompiledPolicy): string {
  switch (p.kind) {
    case 'rate':
      return `[${p.paramIndex}] = { k = 1, e = ${luaNumber(p.emissionUs)}, tol = ${luaNumber(p.toleranceUs)}, w = ${luaNumber(p.windowUs)}, cs = ${p.callerScoped}, u = ${luaNumber(p.unitUs)}, mx = ${luaNumber(p.maxAheadUs)}, sb = ${luaNumber(p.steppedBackAheadUs)} }`;
    case 'concurrency':
      return `[${p.paramIndex}] = { k = 2, lim = ${luaNumber(p.max)}, ttl = ${luaNumber(p.leaseTtlMs)}, init = ${luaNumber(p.initialHoldEstimateMs)}, lag = -1 }`;
    case 'overload':
      return `[${p.paramIndex}] = { k = 3, lim = ${Number.isFinite(p.maxInFlight) ? luaNumber(p.maxInFlight) : '-1'}, ttl = ${luaNumber(p.leaseTtlMs)}, init = ${luaNumber(p.initialHoldEstimateMs)}, lag = ${Number.isFinite(p.maxEventLoopDelayMs) ? luaNumber(p.maxEventLoopDelayMs) : '-1'} }`;
  }
}

/**
 * The generated header: the policy table `P` (by compiled index) and the hold constants.
 */
export function decisionScriptHeader(
  policySet: CompiledPolicySet,
  keyTtlPaddingMs: number,
  keyPrefix: string,
): string {
  const rows = policySet.rows.map(luaPolicyRow);
  const h = policySet.holds;
  return [
    '-- a2a-ratelimit decision script (generated header; body in decision-script.ts)',
    `local P = {\n  ${rows.join(',\n  ')}\n}`,
    `local MAX_NO_SHOWS = ${luaNumber(h.maxNoShows)}`,
    `local MAX_HOLDS = ${luaNumber(h.maxHoldsPerKey)}`,
    `local MIN_GRACE_US = ${luaNumber(h.minGraceUs)}`,
    `local GRACE_FRACTION = ${luaNumber(h.graceFraction)}`,
    `local MIN_ESTIMATE_MS = ${luaNumber(LEASE_MIN_DELAY_MS)}`,
    `local EWMA_ALPHA = ${luaNumber(LEASE_EWMA_ALPHA)}`,
    `local OVERDUE = ${luaNumber(LEASE_OVERDUE_FRACTION)}`,
    `local PAD_MS = ${luaNumber(Math.ceil(keyTtlPaddingMs))}`,
    `local ROLE_AT = ${Buffer.byteLength(keyPrefix, 'utf8') + 1}`,
  ].join('\n');
}

/**
 * A script ready to run: its text and the SHA-1 that `EVALSHA` names it by.
 */
export interface DecisionScript {
  /** Full Lua source. */
  readonly text: string;
  /** Lower-case hex SHA-1 of `text`. */
  readonly sha1: string;
}

/**
 * Builds the script for a policy set and key prefix: the policies baked into a short generated
 * header before the constant body, so one script and one SHA per policy set. `keyTtlPaddingMs` is
 * how long every key outlives the moment its state stops mattering.
 *
 * @example
 * ```ts
 * const script = buildDecisionScript(compilePolicies(policies), 1000, 'a2arl:');
 * await redis.evalsha(script.sha1, 1, 'a2arl:d{c:a}m1', 'm', '', '60000');
 * ```
 */
export function buildDecisionScript(
  policySet: CompiledPolicySet,
  keyTtlPaddingMs: number,
  keyPrefix: string,
): DecisionScript {
  const text = `${decisionScriptHeader(policySet, keyTtlPaddingMs, keyPrefix)}\n${DECISION_SCRIPT_BODY}`;
  return { text, sha1: createHash('sha1').update(text).digest('hex') };
}
