if mode == 'u' then
  local hk = ARGV[3]
  local n = #KEYS
  local out = { nowUs }
  for i = 1, n do
    local p = P[tonumber(ARGV[4 + i])]
    local code = ARGV[4 + n + i]
    local s = { p = p, K = KEYS[i], H = companion(KEYS[i]) }
    if string.byte(code, 1) == 108 then                      -- 'l' or 'l<e>:<h>'
      local id = ARGV[4] .. '.' .. i
      redis.call('ZREM', s.K, id)
      redis.call('HDEL', s.H, id)
      -- The forgotten estimate the admission dropped, back as it was (MemoryStore never dropped it).
      local sep = string.find(code, ':', 2, true)
      if sep then
        local e, h = string.sub(code, 2, sep - 1), string.sub(code, sep + 1)
        if e ~= '' then redis.call('HSET', s.H, '~e', e) end
        if h ~= '' then redis.call('HSET', s.H, '~h', h) end
      end
      out[1 + i] = 0
    else
      loadRate(s, p, '')
      local kept = false
      local role = string.byte(code, 1)
      if role == 99 or role == 67 then                     -- 'c' / 'C' + timestamp before the charge
        if s.tat ~= nil and s.tat > nowUs then s.tat = math.max(s.tat - p.e, nowUs) end
        -- Refunded down to now from a timestamp already past: that timestamp again, exactly as a
        -- rejection leaves it in MemoryStore (a full bucket either way, until the clock steps back).
        local before = tonumber(string.sub(code, 2))
        if before ~= nil and before < nowUs and s.tat == nowUs then
          s.tat = before
          kept = not s.ex and role == 99                    -- putRate would drop it as full
        end
      else
        -- 'h<slot>:<expires>:<no-show taken>:<timestamp>:<decay time>': put the claimed hold back.
        local body = string.sub(code, 2)
        local a = string.find(body, ':', 1, true)
        local b = string.find(body, ':', a + 1, true)
        local c = string.find(body, ':', b + 1, true)
        local d = string.find(body, ':', c + 1, true)
        local exp = tonumber(string.sub(body, a + 1, b - 1))
        if not s.ex then
          -- The claim emptied the key and it was dropped (MemoryStore kept it, never having
          -- claimed): its timestamp, if none was written since, and its decay time as they were.
          newExtra(s)
          s.a = tonumber(string.sub(body, d + 1))
          if s.tat == nil then s.tat = tonumber(string.sub(body, c + 1, d - 1)) end
        end
        redis.call('HSET', s.H, ':' .. hk, string.sub(body, 1, b - 1))
        s.c = s.c + 1
        s.n = s.n + tonumber(string.sub(body, b + 1, c - 1))
        if exp < s.x then s.x = exp end
        if exp > s.y then s.y = exp end
      end
      if kept then redis.call('SET', s.K, fmt(s.tat), 'PX', ttlMs(0)) else putRate(s, p) end
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
  -- At most MAX_USAGE_DEBT_US (core/compiled-policy.ts) ahead: a huge report must not overflow.
  -- Negative units (a settled reservation) refund down to a full bucket, never past it.
  s.tat = math.max(math.min(t + tonumber(ARGV[4]) * p.u, nowUs + 315360000000000), nowUs)
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
  local expires = tonumber(redis.call('ZSCORE', Z, id))
  redis.call('ZREM', Z, id)
  redis.call('HDEL', H, id)
  -- Already expired: given up, it feeds no estimate (lease-step.ts releaseLease).
  if expires == nil or expires <= nowMs then return 0 end
  local held = math.max(0, nowMs - tonumber(acquired))
  local eh = redis.call('HMGET', H, '~e', '~h')
  local e = tonumber(eh[1])
  if e == nil then e = held else e = e + EWMA_ALPHA * (held - e) end
  local old = redis.call('ZRANGEBYSCORE', Z, '-inf', fmtf(nowMs))
  if #old > 0 then dropLeases(Z, H, old) end
  -- The hold-time estimate outlives the last lease until this one would have expired (decide.ts
  -- releaseLease); the hash keeps the TTL of the last admission or renewal, at least that long.
  redis.call('HSET', H, '~e', fmtf(e), '~h', fmtf(math.max(tonumber(eh[2]) or expires, expires)))
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
