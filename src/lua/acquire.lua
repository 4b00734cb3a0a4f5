-- acquire: take the mutex KEY for a token, or say how long it stays taken.
-- KEYS[1] lock (string: owner token)   KEYS[2] meta (hash: who holds it)
-- KEYS[3] fence (string: last fencing token)   KEYS[4] sem (zset, -N mode)
-- ARGV[1] token  ARGV[2] lease ms  ARGV[3] host  ARGV[4] pid  ARGV[5] user
-- ARGV[6] command line  ARGV[7] fence expiry ms
-- Returns {1, fence} when the caller holds the lock, {0, pttl} when not
-- (pttl -1: held by a key without expiry that someone else wrote).
-- Invariants: one holder; the same token again is a harmless retry (a
-- timed-out acquire may have been applied) or a nested, re-entrant run:
-- it never shortens the lease; fence = max(last + 1, server ms), so it
-- strictly increases even after the fence key expired.
if redis.call('EXISTS', KEYS[4]) == 1 then
  return redis.error_reply('RLOCK_MODE the key is in use as a semaphore (-N)')
end
local lease = tonumber(ARGV[2])
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  if redis.call('PTTL', KEYS[1]) < lease then
    redis.call('PEXPIRE', KEYS[1], lease)
    redis.call('PEXPIRE', KEYS[2], lease)
  end
  return {1, tonumber(redis.call('HGET', KEYS[2], 'fence') or '0')}
end
if cur then
  return {0, redis.call('PTTL', KEYS[1])}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fence = math.max(tonumber(redis.call('GET', KEYS[3]) or '0') + 1, now)
local fs = string.format('%d', fence)
redis.call('SET', KEYS[1], ARGV[1], 'PX', lease)
redis.call('SET', KEYS[3], fs, 'PX', ARGV[7])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5],
  'cmd', ARGV[6], 'since', string.format('%d', now), 'lease', ARGV[2],
  'fence', fs)
redis.call('PEXPIRE', KEYS[2], lease)
return {1, fence}
