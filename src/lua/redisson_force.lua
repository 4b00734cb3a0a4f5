-- redisson_force: break KEY whoever holds it, as Redisson's forceUnlock
-- does (rlock release --force --redisson).
-- KEYS: lock meta queue timeouts waiters broken
-- ARGV: wake wake_prefix wake_ttl_ms
-- lock: the hash at KEY, queue, timeouts, waiters: the fair lock's
-- (lib/redisson.lua); meta: rlock's holder record; broken: where an rlock
-- holder broken is told (a holder BLPOPs it); wake: Redisson's unlock
-- channel; wake_prefix: wake..":", a fair waiter's channel is that and
-- its field; wake_ttl_ms: how long broken keeps its element.
-- RUNS: TIME; HGETALL lock; HGETALL meta; DEL lock meta
-- RUNS: PUBLISH =wake x; SPUBLISH? =wake x; LINDEX queue 0
-- RUNS: ZSCORE timeouts x; ZREM timeouts x; LPOP queue; HGET waiters x
-- RUNS: HDEL waiters x; PUBLISH =wake_prefix+x x
-- RUNS: SPUBLISH? =wake_prefix+x x; PUBSUB? SHARDNUMSUB =wake_prefix+x
-- RUNS: PUBSUB? NUMSUB =wake_prefix+x; LPUSH broken 1; PEXPIRE broken 1
-- Returns the holders broken, {{user, host, pid, cmd}, ...}: rlock's
-- record of its holder, or '' and the field for a Redisson client; empty
-- when nothing was held, and then nothing has been written.
-- Invariants: the fence counter stays, so the next holder's fence is
-- still greater than the broken one's; the unlock message goes where a
-- release sends it, so the next waiter tries at once.
local now = server_ms()
local f = redis.call('HGETALL', k_lock)
if #f == 0 then return {} end
local m = redis.call('HGETALL', k_meta)
local mf = {}
for i = 1, #m, 2 do mf[m[i]] = m[i + 1] end
local broken, ours = {}, 0
for i = 1, #f, 2 do
  if mf.field == f[i] then
    broken[#broken + 1] = {mf.user or '', mf.host or '', mf.pid or '',
      mf.cmd or ''}
    ours = ours + 1
  else
    broken[#broken + 1] = {'', '', '', f[i]}
  end
end
redis.call('DEL', k_lock, k_meta)
redisson_publish(a_wake)
local head = redisson_prune(k_queue, k_timeouts, k_waiters, a_wake_prefix,
  now)
if head then redisson_publish(a_wake_prefix .. head) end
if ours > 0 then
  redis.call('LPUSH', k_broken, '1')
  redis.call('PEXPIRE', k_broken, a_wake_ttl_ms)
end
return broken
