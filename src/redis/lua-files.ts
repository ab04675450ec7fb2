/**
 * @module lua-files
 * The Redis store's Lua script texts, read once at load from the `.lua` files beside this module.
 */

import { readFileSync } from 'node:fs';

/**
 * The text of `src/redis/<name>` (or `dist/redis/<name>` when built), exactly as the file holds it.
 *
 * @internal
 */
export function readLua(name: string): string {
  return readFileSync(new URL(`./${name}`, import.meta.url), 'utf8');
}

/**
 * The decision part of the script (`decision.lua`): the clock, the fast path, the state of a rate
 * key (TAT, holds, no-shows) and of a lease key, the decision over one slot's keys (`core/decide.ts`
 * transcribed) and the modes `d`, `t` and `b`; it defines the helpers the later modes use.
 *
 * @internal
 */
export const LUA_DECISION = readLua('decision.lua');

/**
 * The script's other modes (`leases-and-records.lua`), run after {@link LUA_DECISION}: the
 * cross-slot refund (`u`) and reservation (`r`), reported usage (`g`), lease release (`l`) and
 * renewal (`n`), the deduplication records (`m`, `k`, `p`, `x`), the error of an unknown mode.
 *
 * @internal
 */
export const LUA_LEASES_AND_RECORDS = readLua('leases-and-records.lua');

/**
 * The policy-set script (`policy-set.lua`): `g` the generation; `f` generation, version, data;
 * `p` publish (`ARGV[2]` version, `ARGV[3]` data), returning the new generation.
 *
 * @internal
 */
export const LUA_POLICY_SET = readLua('policy-set.lua');
