/**
 * @module decision-script
 * The Lua script `RedisStore` runs: the decision of `core/decide.ts` (DESIGN §3) transcribed
 * line by line, so a Redis-backed limiter decides exactly as `MemoryStore` does, in one round trip.
 * It also releases and renews leases and keeps deduplication records. The policies are baked into
 * a short generated header (one script and one SHA per policy set); the body is constant.
 *
 * Number discipline: every timestamp is an integer number of µs (≈1.76e15, exact in a double).
 * A Lua number passed to `redis.call` is written exactly (Redis formats it with `%.17g`, or an
 * exact shortest form from 7.2 on), but Lua's own `tostring` and `..` use `%.14g`, so numbers
 * built into strings are formatted explicitly (`%.0f` for integers, `%.17g` for the fractional
 * lease times in ms and the hold-time EWMA). Everything returned is an integer (Redis truncates
 * Lua numbers to integers in replies).
 *
 * This module owns the text only; `RedisStore` owns keys, arguments and replies.
 */

import { createHash } from 'node:crypto';
import { LEASE_EWMA_ALPHA, LEASE_MIN_DELAY_MS, LEASE_OVERDUE_FRACTION } from '../core/decide.js';
import type { CompiledPolicy, CompiledPolicySet } from '../core/policy.js';

/**
 * Script modes (ARGV[1]).
 *
 * @example
 * ```ts
 * SCRIPT_MODES.decide; // 'd'
 * ```
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
 * The body of the script: constant, the same for every policy set. ARGV and KEYS per mode:
 *
 * - every mode: `ARGV[1]` mode, `ARGV[2]` now in ms (`''` = Redis `TIME`).
 * - `d`, `t`: `ARGV[3]` hold key (`caller \0 messageId`, `''` = none), `ARGV[4..]` policy
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
 *
 * @example
 * ```ts
 * const text = decisionScriptHeader(policySet, 1000, 'a2arl:') + DECISION_SCRIPT_BODY;
 * ```
 */
export const DECISION_SCRIPT_BODY = `
local INF = math.huge
local mode = ARGV[1]                      -- see SCRIPT_MODES
local long = mode == 'D' or mode == 'T'   -- long argument form: lag and lease id base present
if long then mode = string.lower(mode) end
local first = long and 6 or 4             -- d/t: index of the first policy index in ARGV
local nowMs, nowUs
if ARGV[2] == '' then                     -- production: one clock (this node's) for every host
  local t = redis.call('TIME')
  nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
  nowMs = nowUs / 1000
else                                      -- injected time (tests, simulation): ms as sent
  nowMs = tonumber(ARGV[2])
  nowUs = math.floor(nowMs * 1000)
end

-- Fast path, defined before anything else (the body runs per call, so every closure costs
-- time): every step is a rate key without holds or no-shows, and every one conforms now. Exactly
-- the general path's admission for that case; nil (nothing written) for anything else.
local function fastAdmit(k0, a0, n, out, o)
  local tats = {}
  for i = 1, n do
    local p = P[tonumber(ARGV[a0 + i])]
    if p.k ~= 1 then return nil end
    local v = redis.call('GET', KEYS[k0 + i])
    local tat
    if v then
      tat = tonumber(v)
      if tat == nil then return nil end                   -- '<tat>e': holds or no-shows
      if tat - p.tol - nowUs > 0 then return nil end      -- does not conform now
      if tat < nowUs then tat = nowUs end
    else
      tat = nowUs
    end
    tats[i] = tat + p.e
  end
  -- The reply of an admission (see decideSteps) at out[o + 1 ..]; returns its length.
  out[o + 1] = 1; out[o + 2] = nowUs; out[o + 3] = 0
  for i = 1, n do
    local tat = tats[i]
    redis.call('SET', KEYS[k0 + i], tat, 'PX', math.ceil((tat - nowUs) / 1000) + PAD_MS)
    out[o + 3 + i] = tat
  end
  return 3 + n
end

local function argvNumbers(from, to)
  local t = {}
  for i = from, to do t[i - from + 1] = tonumber(ARGV[i]) end
  return t
end

if mode == 'd' then
  local out = {}
  if fastAdmit(0, first - 1, #KEYS, out, 0) then return out end
end

local function fmt(v) return string.format('%.0f', v) end
-- The companion hash of a main key: the role byte after the prefix, 'k' -> 'h' (same hash tag).
local function companion(k) return string.sub(k, 1, ROLE_AT - 1) .. 'h' .. string.sub(k, ROLE_AT + 1) end
local function fmtf(v) return string.format('%.17g', v) end
-- A key lives until its state stops mattering (a horizon in µs from now), plus padding.
local function ttlMs(horizonUs) return math.ceil(horizonUs / 1000) + PAD_MS end

-- Rate key: K = "<tat>" or "<tat>e" (e: the holds hash exists), H = holds hash with
-- n (no-shows), a (no-show decay time), x (earliest hold expiry, '' = none), y (latest hold
-- expiry), c (hold count) and one field ':<caller>\\0<messageId>' = '<slotUs>:<expiresUs>' per hold.
local function loadRate(s, p, hk)
  local v = redis.call('GET', s.K)
  local tat, ex = nil, false
  if v then
    local i = string.find(v, 'e', 1, true)
    if i then ex = true; tat = tonumber(string.sub(v, 1, i - 1)) else tat = tonumber(v) end
  end
  if ex then
    local m = redis.call('HMGET', s.H, 'n', 'a', 'x', 'y', 'c')
    if m[5] then
      s.n = tonumber(m[1]); s.a = tonumber(m[2]); s.x = tonumber(m[3]) or INF
      s.y = tonumber(m[4]); s.c = tonumber(m[5])
    else
      ex = false
    end
  end
  s.ex = ex
  s.dirty = ex
  if ex then
    -- Refund holds that expired unclaimed, count them as no-shows (decide.ts settleExtra).
    if nowUs > s.x then
      local all = redis.call('HGETALL', s.H)
      local nxt = INF
      for j = 1, #all, 2 do
        local f = all[j]
        if string.byte(f, 1) == 58 then
          local hv = all[j + 1]
          local exp = tonumber(string.sub(hv, string.find(hv, ':', 1, true) + 1))
          if nowUs > exp then
            redis.call('HDEL', s.H, f)
            s.c = s.c - 1
            if tat ~= nil and tat > nowUs then tat = math.max(tat - p.e, nowUs) end
            if s.n == 0 then s.a = nowUs end
            s.n = s.n + 1
          elseif exp < nxt then
            nxt = exp
          end
        end
      end
      s.x = nxt
    end
    -- One no-show forgiven per window.
    if s.n > 0 then
      local forgiven = math.floor((nowUs - s.a) / p.w)
      if forgiven > 0 then
        s.n = math.max(0, s.n - forgiven)
        s.a = s.a + forgiven * p.w
      end
    end
  end
  s.tat = tat
  s.hold = nil
  if hk ~= '' and p.cs and ex and s.c > 0 then
    local hv = redis.call('HGET', s.H, ':' .. hk)
    if hv then
      local sep = string.find(hv, ':', 1, true)
      s.hold = hv
      s.slot = tonumber(string.sub(hv, 1, sep - 1))
    end
  end
  if s.hold then
    s.delay = math.max(0, s.slot - nowUs)
  elseif tat ~= nil then
    s.delay = math.max(tat - p.tol - nowUs, 0)
  else
    s.delay = 0
  end
end

local function newExtra(s)
  s.ex = true; s.n = 0; s.a = nowUs; s.x = INF; s.y = 0; s.c = 0
end

local function charge(s, p)
  local t = s.tat
  if t == nil or t < nowUs then t = nowUs end
  s.tat = t + p.e
end

-- decide.ts putRate + MemoryStore: a full bucket without holds or no-shows is no key at all.
local function putRate(s, p)
  local tat = s.tat or nowUs
  if (not s.ex) or (s.c == 0 and s.n == 0) then
    if s.ex then redis.call('DEL', s.H) end
    if tat <= nowUs then
      redis.call('DEL', s.K)
    else
      redis.call('SET', s.K, fmt(tat), 'PX', ttlMs(tat - nowUs))
    end
  else
    local ahead = math.max(tat - nowUs, s.y - nowUs, 0)
    local ttl = ttlMs(ahead + (s.n + s.c + 1) * p.w)
    redis.call('HSET', s.H, 'n', fmt(s.n), 'a', fmt(s.a), 'x', s.x == INF and '' or fmt(s.x),
      'y', fmt(s.y), 'c', fmt(s.c))
    redis.call('PEXPIRE', s.H, ttl)
    redis.call('SET', s.K, fmt(tat) .. 'e', 'PX', ttl)
  end
end

-- decide.ts reservableSlotUs + the reservation: 1 when a slot is held for this request.
local function reserve(s, p, hk)
  if s.hold then return 1 end
  if hk == '' or not p.cs then return 0 end
  if s.ex then
    if s.n >= MAX_NO_SHOWS or s.c >= MAX_HOLDS then return 0 end
  elseif MAX_HOLDS == 0 or MAX_NO_SHOWS == 0 then
    return 0
  end
  if s.delay > p.w then return 0 end
  local slot = nowUs + s.delay
  if not s.ex then newExtra(s) end
  local exp = slot + math.max(MIN_GRACE_US, math.floor(s.delay * GRACE_FRACTION))
  redis.call('HSET', s.H, ':' .. hk, fmt(slot) .. ':' .. fmt(exp))
  s.c = s.c + 1
  if exp < s.x then s.x = exp end
  if exp > s.y then s.y = exp end
  charge(s, p)
  s.dirty = true
  return 1
end

local function dropLeases(z, h, ids)
  for i = 1, #ids, 500 do
    local j = math.min(i + 499, #ids)
    redis.call('ZREM', z, unpack(ids, i, j))
    redis.call('HDEL', h, unpack(ids, i, j))
  end
end

-- Lease key: K = sorted set lease id -> expiry ms, H = lease id -> acquired ms, '~e' -> EWMA ms.
local function loadLease(s, p, lag)
  local d = 0
  if p.lim >= 0 then
    local old = redis.call('ZRANGEBYSCORE', s.K, '-inf', fmtf(nowMs))
    if #old > 0 then dropLeases(s.K, s.H, old) end
    local count = redis.call('ZCARD', s.K)
    if count >= p.lim then
      -- decide.ts leaseDelayMs: each lease ends one mean hold after it was acquired (or, past
      -- that, within OVERDUE of it); the request fits once count - lim + 1 of them ended.
      local e = tonumber(redis.call('HGET', s.H, '~e')) or p.init
      local ids = redis.call('ZRANGE', s.K, 0, -1)
      local ends = {}
      for i = 1, #ids, 500 do
        local acquired = redis.call('HMGET', s.H, unpack(ids, i, math.min(i + 499, #ids)))
        for j = 1, #acquired do
          local left = (tonumber(acquired[j]) or nowMs) + e - nowMs
          if left <= 0 then left = e * OVERDUE end
          ends[#ends + 1] = left
        end
      end
      table.sort(ends)
      local ahead = math.min(#ends, math.max(1, count - p.lim + 1))
      d = math.max(MIN_ESTIMATE_MS, math.ceil(ends[ahead] or 0))
    end
  end
  if p.lag >= 0 and lag ~= nil and lag > p.lag then
    d = math.max(d, MIN_ESTIMATE_MS, math.ceil(2 * lag))
  end
  s.delay = d * 1000
end

local function leaseTtlMs(p) return math.ceil(p.ttl) + PAD_MS end

-- The decision over one slot's keys (decide.ts decide): keys[i] and idx[i] (policy index) per
-- step; mode 'd' reserves on rejection, 't' (cross-slot phase 1) returns undo codes instead.
local function decideSteps(mode, keys, idx, hk, lag, base)
  local n = #keys
  local steps = {}
  local setter = nil
  for i = 1, n do
    local p = P[idx[i]]
    local s = { p = p, K = keys[i], H = companion(keys[i]) }
    if p.k == 1 then loadRate(s, p, hk) else loadLease(s, p, lag) end
    steps[i] = s
    if s.delay > 0 and (setter == nil or s.delay > steps[setter].delay) then setter = i end
  end
  if setter == nil then
    -- Admitted: charge every rate key (or claim the held slot), take every lease.
    local out = { 1, nowUs, 0 }
    local undo = {}
    for i = 1, n do
      local s = steps[i]
      local p = s.p
      if p.k == 1 then
        if s.hold then
          redis.call('HDEL', s.H, ':' .. hk)
          s.c = s.c - 1
          local dec = 0
          if s.n > 0 then s.n = s.n - 1; dec = 1 end
          out[3] = 1
          undo[i] = 'h' .. s.hold .. ':' .. dec
        else
          charge(s, p)
          undo[i] = 'c'
        end
        putRate(s, p)
        out[3 + i] = s.tat
      else
        if p.lim >= 0 then
          local id = base .. '.' .. i
          redis.call('ZADD', s.K, fmtf(nowMs + p.ttl), id)
          redis.call('HSET', s.H, id, fmtf(nowMs))
          redis.call('PEXPIRE', s.K, leaseTtlMs(p))
          redis.call('PEXPIRE', s.H, leaseTtlMs(p))
        end
        undo[i] = 'l'
        out[3 + i] = 0
      end
    end
    if mode == 't' then
      for i = 1, n do out[3 + n + i] = undo[i] end
    end
    return out
  end
  -- Rejected: nothing charged; lazy refunds written back; the setter may reserve (mode d only).
  local s = steps[setter]
  local reserved = 2
  if s.p.k == 1 then
    if mode == 'd' then reserved = reserve(s, s.p, hk) elseif s.hold then reserved = 1 else reserved = 0 end
  end
  local out = { 0, nowUs, setter, s.delay, reserved }
  for i = 1, n do
    local st = steps[i]
    if st.p.k == 1 then
      if st.dirty then putRate(st, st.p) end
      out[5 + i] = st.tat or -1
    else
      out[5 + i] = 0
    end
  end
  return out
end

if mode == 'd' or mode == 't' then
  return decideSteps(mode, KEYS, argvNumbers(first, #ARGV), ARGV[3], long and tonumber(ARGV[4]) or nil,
    long and ARGV[5] or '')
end

-- A batch of decisions that arrived together at one client, decided one after the other in
-- arrival order at one instant (one TIME): ARGV[3..] holds, per decision, its step count n,
-- hold key, event-loop delay ('' = none), lease id base, then n policy indices; KEYS holds the
-- decisions' keys back to back. The reply is one decision reply per decision.
if mode == 'b' then
  -- Flat reply: per decision, its reply's length, then the reply.
  local out = {}
  local o, a, k = 0, 3, 0
  local total = #ARGV
  while a <= total do
    local n = tonumber(ARGV[a])
    local len = fastAdmit(k, a + 3, n, out, o + 1)
    if len == nil then
      local keys = {}
      for i = 1, n do keys[i] = KEYS[k + i] end
      local r = decideSteps('d', keys, argvNumbers(a + 4, a + 3 + n), ARGV[a + 1],
        tonumber(ARGV[a + 2]), ARGV[a + 3])
      len = #r
      for i = 1, len do out[o + 1 + i] = r[i] end
    end
    out[o + 1] = len
    o = o + 1 + len
    a = a + 4 + n
    k = k + n
  end
  return out
end

if mode == 'u' then
  local hk = ARGV[3]
  local n = #KEYS
  local out = { nowUs }
  for i = 1, n do
    local p = P[tonumber(ARGV[4 + i])]
    local code = ARGV[4 + n + i]
    local s = { p = p, K = KEYS[i], H = companion(KEYS[i]) }
    if code == 'l' then
      local id = ARGV[4] .. '.' .. i
      redis.call('ZREM', s.K, id)
      redis.call('HDEL', s.H, id)
      out[1 + i] = 0
    else
      loadRate(s, p, '')
      if code == 'c' then
        if s.tat ~= nil and s.tat > nowUs then s.tat = math.max(s.tat - p.e, nowUs) end
      else
        -- 'h<slot>:<expires>:<no-show taken>': put the claimed hold back.
        local body = string.sub(code, 2)
        local a = string.find(body, ':', 1, true)
        local b = string.find(body, ':', a + 1, true)
        local exp = tonumber(string.sub(body, a + 1, b - 1))
        if not s.ex then newExtra(s) end
        redis.call('HSET', s.H, ':' .. hk, string.sub(body, 1, b - 1))
        s.c = s.c + 1
        s.n = s.n + tonumber(string.sub(body, b + 1))
        if exp < s.x then s.x = exp end
        if exp > s.y then s.y = exp end
      end
      putRate(s, p)
      out[1 + i] = s.tat or -1
    end
  end
  return out
end

-- decide.ts chargeUsage: KEYS[1] a usage policy's key, ARGV[3] its row, ARGV[4] units.
if mode == 'g' then
  local p = P[tonumber(ARGV[3])]
  local s = { p = p, K = KEYS[1], H = companion(KEYS[1]) }
  loadRate(s, p, '')
  local t = s.tat
  if t == nil or t < nowUs then t = nowUs end
  s.tat = t + tonumber(ARGV[4]) * p.u
  putRate(s, p)
  return s.tat
end

if mode == 'r' then
  local hk = ARGV[3]
  local p = P[tonumber(ARGV[4])]
  local s = { p = p, K = KEYS[1], H = companion(KEYS[1]) }
  loadRate(s, p, hk)
  local r = 0
  if s.delay > 0 then r = reserve(s, p, hk) end
  if s.dirty then putRate(s, p) end
  return { nowUs, s.delay, r, s.tat or -1 }
end

if mode == 'l' then
  local Z, H = KEYS[1], companion(KEYS[1])
  local id = ARGV[4]
  local acquired = redis.call('HGET', H, id)
  if not acquired then return 0 end
  redis.call('ZREM', Z, id)
  redis.call('HDEL', H, id)
  local held = math.max(0, nowMs - tonumber(acquired))
  local e = tonumber(redis.call('HGET', H, '~e'))
  if e == nil then e = held else e = e + EWMA_ALPHA * (held - e) end
  local old = redis.call('ZRANGEBYSCORE', Z, '-inf', fmtf(nowMs))
  if #old > 0 then dropLeases(Z, H, old) end
  -- The hold-time estimate outlives the last lease (decide.ts releaseLease); the hash keeps the
  -- TTL of the last admission, so it is dropped lazily like MemoryStore's empty sets.
  redis.call('HSET', H, '~e', fmtf(e))
  return 1
end

if mode == 'n' then
  local p = P[tonumber(ARGV[3])]
  local id = ARGV[4]
  local score = redis.call('ZSCORE', KEYS[1], id)
  if not score or tonumber(score) <= nowMs then return 0 end
  redis.call('ZADD', KEYS[1], 'XX', fmtf(nowMs + p.ttl), id)
  redis.call('PEXPIRE', KEYS[1], leaseTtlMs(p))
  redis.call('PEXPIRE', companion(KEYS[1]), leaseTtlMs(p))
  return 1
end

-- Deduplication record: '<expiresMs> <pendingUntilMs> <owner> <taskId>'. Expiry is checked
-- against script time (the Redis TTL only cleans up). No task id: pending while pendingUntil is
-- ahead (its owner renews it, like a lease), orphaned after that (the owner died or lost Redis).
local function parseRecord(v)
  local a = string.find(v, ' ', 1, true)
  if not a then return nil end
  local b = string.find(v, ' ', a + 1, true)
  if not b then return nil end
  local c = string.find(v, ' ', b + 1, true)
  if not c then return nil end
  return tonumber(string.sub(v, 1, a - 1)), tonumber(string.sub(v, a + 1, b - 1)),
    string.sub(v, b + 1, c - 1), string.sub(v, c + 1)
end

if mode == 'm' then
  local ttl = tonumber(ARGV[3])
  local pttl = math.min(tonumber(ARGV[4]) or ttl, ttl)
  local owner = ARGV[5]
  if owner == '' then owner = '-' end
  local v = redis.call('GET', KEYS[1])
  if v then
    local exp, pu, _, task = parseRecord(v)
    if exp and exp > nowMs then
      if task ~= '' then return { 0, task } end
      if pu > nowMs then return { 0, '', 0 } end
      if ARGV[6] ~= '1' then return { 0, '', 1 } end
    end
  end
  redis.call('SET', KEYS[1], fmtf(nowMs + ttl) .. ' ' .. fmtf(nowMs + pttl) .. ' ' .. owner .. ' ',
    'PX', math.ceil(ttl) + PAD_MS)
  return { 1 }
end

if mode == 'k' then
  local ttl = tonumber(ARGV[3])
  local exp = fmtf(nowMs + ttl)
  redis.call('SET', KEYS[1], exp .. ' ' .. exp .. ' - ' .. ARGV[4], 'PX', math.ceil(ttl) + PAD_MS)
  return 1
end

if mode == 'p' or mode == 'x' then
  local v = redis.call('GET', KEYS[1])
  if not v then return 0 end
  local exp, _, own, task = parseRecord(v)
  local owner = mode == 'p' and ARGV[4] or ARGV[3]
  if not exp or exp <= nowMs or task ~= '' or own ~= owner then return 0 end
  if mode == 'x' then
    redis.call('DEL', KEYS[1])
    return 1
  end
  local pu = math.min(nowMs + tonumber(ARGV[3]), exp)
  redis.call('SET', KEYS[1], fmtf(exp) .. ' ' .. fmtf(pu) .. ' ' .. own .. ' ', 'KEEPTTL')
  return 1
end

return redis.error_reply('a2a-ratelimit: unknown script mode ' .. tostring(mode))
`;

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
      return `[${p.paramIndex}] = { k = 1, e = ${luaNumber(p.emissionUs)}, tol = ${luaNumber(p.toleranceUs)}, w = ${luaNumber(p.windowUs)}, cs = ${p.callerScoped}, u = ${luaNumber(p.unitUs)} }`;
    case 'concurrency':
      return `[${p.index}] = { k = 2, lim = ${luaNumber(p.max)}, ttl = ${luaNumber(p.leaseTtlMs)}, init = ${luaNumber(p.initialHoldEstimateMs)}, lag = -1 }`;
    case 'overload':
      return `[${p.index}] = { k = 3, lim = ${Number.isFinite(p.maxInFlight) ? luaNumber(p.maxInFlight) : '-1'}, ttl = ${luaNumber(p.leaseTtlMs)}, init = ${luaNumber(p.initialHoldEstimateMs)}, lag = ${Number.isFinite(p.maxEventLoopDelayMs) ? luaNumber(p.maxEventLoopDelayMs) : '-1'} }`;
  }
}

/**
 * The generated header: the policy table `P` (by compiled index) and the hold constants.
 *
 * @example
 * ```ts
 * decisionScriptHeader(compilePolicies([{ name: 'r', kind: 'rate', limit: 1, windowSeconds: 1 }]), 1000, 'a2arl:');
 * ```
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
 *
 * @example
 * ```ts
 * const { text, sha1 } = buildDecisionScript(policySet, 1000);
 * ```
 */
export interface DecisionScript {
  /** Full Lua source. */
  readonly text: string;
  /** Lower-case hex SHA-1 of `text`. */
  readonly sha1: string;
}

/**
 * Builds the script for a policy set and key prefix. `keyTtlPaddingMs` is how long every key
 * outlives the moment its state stops mattering.
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
