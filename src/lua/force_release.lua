-- force_release: break KEY whoever holds it (rlock release --force).
-- KEYS: lock meta sem limit queue tokens
-- ARGV: meta_prefix wake wake_prefix waiter_prefix wake_ttl_ms
-- meta: the mutex's; tokens: the wake tokens; the prefixes "P{K}:meta:",
-- "P{K}:wake:" and "P{K}:w:"; wake: the channel P{K}:wake.
-- Returns the holders broken, {{user, host, pid, cmd}, ...} ('' where
-- rlock wrote nothing); empty when nothing was held, and then nothing has
-- been written.
-- Invariants: the fencing counter stays, so the next holder's fence is
-- still greater than the broken one's. The --fair queue stays too and its
-- live head is told its turn came, as on a normal release; plain waiters
-- (BLPOP on tokens) get one token per slot now free, at most N. The
-- broken holders find out at their next extend.
acl_ask(function()
  acl('TIME')
  acl('GET', k_lock)
  acl('HMGET', k_meta, 'user')
  acl('DEL', k_lock, k_meta)
  acl('ZRANGEBYSCORE', k_sem, '0', '0')
  acl('HMGET', a_meta_prefix .. 'x', 'user')
  acl('GET', k_limit)
  acl('ZRANGE', k_sem, '0', '0')
  acl('DEL', a_meta_prefix .. 'x')
  acl('DEL', k_sem, k_limit)
  acl('SPUBLISH', a_wake, 'released')
  acl_wake_plain(k_tokens)
  acl_wake_queue(k_queue, a_waiter_prefix, a_wake_prefix)
end)
if acl_refused then return acl_refused end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local broken, slots = {}, 0

local function who(meta)
  local m = redis.call('HMGET', meta, 'user', 'host', 'pid', 'cmd')
  broken[#broken + 1] = {m[1] or '', m[2] or '', m[3] or '', m[4] or ''}
end

if redis.call('GET', k_lock) then
  who(k_meta)
  redis.call('DEL', k_lock, k_meta)
  slots = 1
end
local live = redis.call('ZRANGEBYSCORE', k_sem, string.format('(%d', now),
  '+inf')
if #live > 0 then
  for _, tok in ipairs(live) do who(a_meta_prefix .. tok) end
  slots = tonumber(redis.call('GET', k_limit) or '') or #live
  -- Expired members' meta keys too: nothing may outlive the semaphore.
  for _, tok in ipairs(redis.call('ZRANGE', k_sem, 0, -1)) do
    redis.call('DEL', a_meta_prefix .. tok)
  end
  redis.call('DEL', k_sem, k_limit)
end
if #broken == 0 then return broken end

publish(a_wake, 'released')
wake_plain(k_tokens, slots, slots, a_wake_ttl_ms)
wake_queue(k_queue, a_waiter_prefix, a_wake_prefix)
return broken
