-- redisson_release: Redisson's unlock, for our field only, then wake who
-- may take KEY now.
-- KEYS: lock meta queue timeouts waiters last?
-- ARGV: field lease_ms wake wake_prefix exit? lost? last_ttl_ms? ran_ms?
-- lock: the hash at KEY, queue, timeouts, waiters: the fair lock's
-- (lib/redisson.lua); meta: our holder record; last: the last run, given
-- with the arguments after wake_prefix only when a run ended (exit:
-- rlock's exit status, lost '1' if the lease was lost, ran_ms: ms since
-- the grant by the holder's clock); wake: Redisson's unlock channel;
-- wake_prefix: wake..":", a fair waiter's channel is that and its field.
-- RUNS: TIME; HEXISTS lock x; HINCRBY lock x 1; PEXPIRE lock 1; DEL lock
-- RUNS: HMGET meta f; DEL meta; HMGET last f; HSET last f v
-- RUNS: PEXPIRE last 1; PUBLISH =wake x; SPUBLISH? =wake x
-- RUNS: LINDEX queue 0; ZSCORE timeouts x; ZREM timeouts x; LPOP queue
-- RUNS: HGET waiters x; HDEL waiters x; PUBLISH =wake_prefix+x x
-- RUNS: SPUBLISH? =wake_prefix+x x; PUBSUB? SHARDNUMSUB =wake_prefix+x
-- RUNS: PUBSUB? NUMSUB =wake_prefix+x
-- Returns 1 when released, 0 when our field was gone (nothing done,
-- nothing recorded).
-- Invariants: never touches another client's field or expiry. At 0 the
-- key goes and Redisson's unlock message (0) is published on wake, for
-- plain waiters, and on the channel of the fair queue's head, so exactly
-- the next one in line tries; both ways, PUBLISH and SPUBLISH, as
-- Redisson's clients may listen either way.
local now = server_ms()
if redis.call('HEXISTS', k_lock, a_field) == 0 then return 0 end
if redis.call('HINCRBY', k_lock, a_field, -1) > 0 then
  redis.call('PEXPIRE', k_lock, a_lease_ms)
  return 1
end
redis.call('DEL', k_lock)
local m = redis.call('HMGET', k_meta, 'user', 'host', 'pid', 'cmd', 'since',
  'fence')
redis.call('DEL', k_meta)
redisson_publish(a_wake)
local head = redisson_prune(k_queue, k_timeouts, k_waiters, a_wake_prefix,
  now)
if head then redisson_publish(a_wake_prefix .. head) end
if k_last then
  if not m[5] then
    m[5] = string.format('%d', now - tonumber(a_ran_ms))
  end
  record_run(k_last, m, string.format('%d', now), a_exit, a_lost,
    a_last_ttl_ms)
end
return 1
