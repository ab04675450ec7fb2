
local mode = ARGV[1]
if mode == 'g' then return redis.call('HGET', KEYS[1], 'g') or '0' end
if mode == 'f' then return redis.call('HMGET', KEYS[1], 'g', 'v', 'd') end
if mode == 'p' then
  local g = redis.call('HINCRBY', KEYS[1], 'g', 1)
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
  return g
end
return redis.error_reply('a2a-ratelimit: unknown policy-set mode ' .. tostring(mode))
