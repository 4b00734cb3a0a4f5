-- force_release: break KEY whoever holds it (rlock release --force).
-- KEYS[1] lock  KEYS[2] mutex meta  KEYS[3] sem  KEYS[4] limit  KEYS[5] queue
-- KEYS[6] wake tokens  KEYS[7] broken  ARGV[1] "P{K}:meta:"
-- ARGV[2] "P{K}:wake"  ARGV[3] "P{K}:wake:"  ARGV[4] "P{K}:w:"
-- ARGV[5] wake token ttl ms
-- Returns the holders broken, {{user, host, pid, cmd}, ...} ('' where
-- rlock wrote nothing); empty when nothing was held, and then nothing has
-- been written.
-- Invariants: the fencing counter stays, so the next holder's fence is
-- still greater than the broken one's. The --fair queue stays too and its
-- live head is told its turn came, as on a normal release; plain waiters
-- (BLPOP on KEYS[6]) get one token per slot now free, at most N. The
-- broken holders are told at once: KEYS[7] gets one element for each
-- (for ARGV[5] ms), and a holder blocked in BLPOP on it asks whether the
-- lock is still its own when one comes.
acl_ask(function()
  acl('TIME')
  acl('GET', KEYS[1])
  acl('HMGET', KEYS[2], 'user')
  acl('DEL', KEYS[1], KEYS[2])
  acl('ZRANGEBYSCORE', KEYS[3], '0', '0')
  acl('HMGET', ARGV[1] .. 'x', 'user')
  acl('GET', KEYS[4])
  acl('ZRANGE', KEYS[3], '0', '0')
  acl('DEL', ARGV[1] .. 'x')
  acl('DEL', KEYS[3], KEYS[4])
  acl('SPUBLISH', ARGV[2], 'released')
  acl_wake_plain(KEYS[6])
  acl('LPUSH', KEYS[7], '1')
  acl('PEXPIRE', KEYS[7], '1')
  acl_wake_queue(KEYS[5], ARGV[4], ARGV[3])
end)
if acl_refused then return acl_refused end
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

publish(ARGV[2], 'released')
wake_plain(KEYS[6], slots, slots, ARGV[5])
wake_queue(KEYS[5], ARGV[4], ARGV[3])
for _ in ipairs(broken) do redis.call('LPUSH', KEYS[7], '1') end
redis.call('PEXPIRE', KEYS[7], ARGV[5])
return broken
