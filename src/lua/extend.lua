-- extend: renew the lease, but only for the token that holds it.
-- KEYS: lock meta sem limit queue
-- ARGV: token lease_ms limit
-- meta: the holder's; limit: N.
-- Returns 1 when extended, 0 when KEY is not ours (any more); refused with
-- RLOCK_NOPERM (acl.lua), writing nothing, when the ACL lacks a permission.
-- Invariant: never extends a lock held by another token. Also keeps the
-- --fair queue alive while waiters sleep behind us.
local token, lease = a_token, tonumber(a_lease_ms)
acl_ask(function()
  acl_extend(k_lock, k_meta, k_sem, k_limit, k_queue, tonumber(a_limit))
end)
if acl_refused then return acl_refused end
if a_limit == '1' then
  if redis.call('GET', k_lock) ~= token then return 0 end
  redis.call('PEXPIRE', k_lock, a_lease_ms)
else
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local score = redis.call('ZSCORE', k_sem, token)
  if not score or tonumber(score) <= now then
    redis.call('ZREM', k_sem, token)
    return 0
  end
  redis.call('ZADD', k_sem, now + lease, token)
  local last = redis.call('ZRANGE', k_sem, -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', k_sem, tonumber(last[2]) - now)
  redis.call('PEXPIRE', k_limit, tonumber(last[2]) - now)
end
redis.call('PEXPIRE', k_meta, a_lease_ms)
local q = redis.call('PTTL', k_queue)
if q >= 0 and q < 2 * lease then
  redis.call('PEXPIRE', k_queue, 2 * lease)
end
return 1
