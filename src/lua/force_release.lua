-- force_release: break KEY whoever holds it (rlock release --force).
-- KEYS[1] lock  KEYS[2] mutex meta  KEYS[3] sem  KEYS[4] limit  KEYS[5] queue
-- KEYS[6] wake tokens   ARGV[1] "P{K}:meta:"  ARGV[2] "P{K}:wake"
-- ARGV[3] "P{K}:wake:"  ARGV[4] "P{K}:w:"  ARGV[5] wake token ttl ms
-- Returns the holders broken, {{user, host, pid, cmd}, ...} ('' where
-- rlock wrote nothing); empty when nothing was held, and then nothing has
-- been written.
-- Invariants: the fencing counter stays, so the next holder's fence is
-- still greater than the broken one's. The --fair queue stays too and its
-- live head is told its turn came, as on a normal release; plain waiters
-- (BLPOP on KEYS[6]) get one token per slot now free, at most N. The
-- broken holders find out at their next extend.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local broken, slots = {}, 0

local function who(meta)
  local m = redis.call('HMGET', meta, 'user', 'host', 'pid', 'cmd')
  broken[#broken + 1] = {m[1] or '', m[2] or '', m[3] or '', m[4] or ''}
end

if redis.call('GET', KEYS[1]) then
  who(KEYS[2])
  redis.call('DEL', KEYS[1], KEYS[2])
  slots = 1
end
local live = redis.call('ZRANGEBYSCORE', KEYS[3], string.format('(%d', now),
  '+inf')
if #live > 0 then
  for _, tok in ipairs(live) do who(ARGV[1] .. tok) end
  slots = tonumber(redis.call('GET', KEYS[4]) or '') or #live
  -- Expired members' meta keys too: nothing may outlive the semaphore.
  for _, tok in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    redis.call('DEL', ARGV[1] .. tok)
  end
  redis.call('DEL', KEYS[3], KEYS[4])
end
if #broken == 0 then return broken end

redis.call('PUBLISH', ARGV[2], 'released')
for _ = 1, slots do redis.call('LPUSH', KEYS[6], '1') end
redis.call('LTRIM', KEYS[6], 0, slots - 1)
redis.call('PEXPIRE', KEYS[6], ARGV[5])
local head = redis.call('LINDEX', KEYS[5], 0)
while head and redis.call('EXISTS', ARGV[4] .. head) == 0 do
  redis.call('LPOP', KEYS[5])
  head = redis.call('LINDEX', KEYS[5], 0)
end
if head then redis.call('PUBLISH', ARGV[3] .. head, 'turn') end
return broken
