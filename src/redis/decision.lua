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
    if tat > nowUs then
      redis.call('SET', KEYS[k0 + i], tat, 'PX', math.ceil((tat - nowUs) / 1000) + PAD_MS)
    else                                                  -- charged nothing (estimate 0): full
      redis.call('DEL', KEYS[k0 + i])
    end
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
-- expiry), c (hold count) and one field ':<holdKeyOf>' = '<slotUs>:<expiresUs>' per hold.
local function loadRate(s, p, hk)
  local v = redis.call('GET', s.K)
  local tat, ex = nil, false
  if v then
    local i = string.find(v, 'e', 1, true)
    if i then ex = true; tat = tonumber(string.sub(v, 1, i - 1)) else tat = tonumber(v) end
  end
  -- gcra.ts isSteppedBack: further ahead than the policy ever writes (the clock stepped back
  -- since): a bucket spent now, its holds and no-shows dropped.
  local stepped = false
  if tat ~= nil and tat - nowUs > p.mx then
    tat = nowUs + p.sb
    if ex then redis.call('DEL', s.H) end
    ex = false
    stepped = true
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
  s.dirty = ex or stepped
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

-- Lease key: K = sorted set lease id -> expiry ms, H = lease id -> acquired ms, '~e' -> EWMA ms,
-- '~h' -> the latest expiry a released lease had (lease-step.ts LeaseSet.releasedUntilMs).
local function loadLease(s, p, lag)
  local d = 0
  if p.lim >= 0 then
    local old = redis.call('ZRANGEBYSCORE', s.K, '-inf', fmtf(nowMs))
    if #old > 0 then dropLeases(s.K, s.H, old) end
    local count = redis.call('ZCARD', s.K)
    s.count = count
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
          -- Cross-slot undo code: the hold, the no-show taken, and the timestamp and no-show decay
          -- time before the claim ('' for none), which a key the claim emptied loses.
          if mode == 't' then
            undo[i] = 'h' .. s.hold .. ':' .. dec .. ':' .. (s.tat and fmt(s.tat) or '') .. ':' .. fmt(s.a)
          end
        else
          -- Cross-slot undo code: 'c' and the timestamp before the charge ('c' alone: no key).
          -- 'C': the key was read dirty (holds or no-shows settled, or stepped back), so a
          -- rejection writes it back, dropping it when full and empty, as MemoryStore does.
          if mode == 't' and s.tat ~= nil then
            undo[i] = (s.dirty and 'C' or 'c') .. fmt(s.tat)
          else
            undo[i] = 'c'
          end
          charge(s, p)
        end
        putRate(s, p)
        out[3 + i] = s.tat
      else
        local code = 'l'
        if p.lim >= 0 then
          if s.count == 0 then
            -- lease-step.ts isSpentLeaseSet: no lease live and no released one's expiry ahead,
            -- the estimate is forgotten (kept or expired alike); code 'l<e>:<h>' puts it back.
            local eh = redis.call('HMGET', s.H, '~e', '~h')
            if (eh[1] or eh[2]) and not (tonumber(eh[2]) and tonumber(eh[2]) > nowMs) then
              redis.call('HDEL', s.H, '~e', '~h')
              code = 'l' .. (eh[1] or '') .. ':' .. (eh[2] or '')
            end
          end
          local id = base .. '.' .. i
          redis.call('ZADD', s.K, fmtf(nowMs + p.ttl), id)
          redis.call('HSET', s.H, id, fmtf(nowMs))
          redis.call('PEXPIRE', s.K, leaseTtlMs(p))
          redis.call('PEXPIRE', s.H, leaseTtlMs(p))
        end
        undo[i] = code
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

