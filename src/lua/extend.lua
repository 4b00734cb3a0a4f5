-- extend: renew the lease, but only for the token that holds it.
-- KEYS[1] lock  KEYS[2] holder meta  KEYS[3] sem  KEYS[4] limit
-- KEYS[5] queue   ARGV[1] token  ARGV[2] lease ms  ARGV[3] N
-- Returns 1 when extended, 0 when KEY is not ours (any more); refused with
-- RLOCK_NOPERM (acl.lua), writing nothing, when the ACL lacks a permission.
-- Invariant: never extends a lock held by another token. Also keeps the
-- --fair queue alive while waiters sleep behind us.
local token, lease = ARGV[1], tonumber(ARGV[2])
acl_ask(function()
  acl_extend(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[3]))
end)
if acl_refused then return acl_refused end
if ARGV[3] == '1' then
  if redis.call('GET', KEYS[1]) ~= token then return 0 end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local score = redis.call('ZSCORE', KEYS[3], token)
  if not score or tonumber(score) <= now then
    redis.call('ZREM', KEYS[3], token)
    return 0
  end
  redis.call('ZADD', KEYS[3], now + lease, token)
  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', KEYS[3], tonumber(last[2]) - now)
  redis.call('PEXPIRE', KEYS[4], tonumber(last[2]) - now)
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
local q = redis.call('PTTL', KEYS[5])
if q >= 0 and q < 2 * lease then
  redis.call('PEXPIRE', KEYS[5], 2 * lease)
end
return 1
