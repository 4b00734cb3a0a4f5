-- redisson_dequeue: a fair waiter that gives up leaves Redisson's queue,
-- as Redisson's own do: the places behind it move up by its allowance.
-- KEYS: queue timeouts waiters
-- ARGV: field allowance_ms wake_prefix
-- queue, timeouts, waiters: the fair lock's (lib/redisson.lua);
-- wake_prefix: Redisson's unlock channel and ":", a fair waiter's channel
-- is that and its field.
-- RUNS: LRANGE queue 0 0; ZINCRBY timeouts 1 x; ZREM timeouts x
-- RUNS: LREM queue 0 x; HDEL waiters x; LINDEX queue 0
-- RUNS: PUBLISH =wake_prefix+x x; SPUBLISH? =wake_prefix+x x
-- Returns 1.
-- Invariant: takes out our place only; a head that leaves tells the next
-- one its turn came (the lock may be free).
local q = redis.call('LRANGE', k_queue, 0, -1)
local behind = false
for i, f in ipairs(q) do
  if behind then
    redis.call('ZINCRBY', k_timeouts, -tonumber(a_allowance_ms), f)
  end
  if f == a_field then behind = i end
end
redis.call('ZREM', k_timeouts, a_field)
redis.call('LREM', k_queue, 0, a_field)
redis.call('HDEL', k_waiters, a_field)
if behind == 1 then
  local head = redis.call('LINDEX', k_queue, 0)
  if head then redisson_publish(a_wake_prefix .. head) end
end
return 1
