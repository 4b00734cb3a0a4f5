-- dequeue: a --fair waiter gives up (timeout, signal): leave the queue and,
-- if we were at its head, pass the turn on.
-- KEYS: queue waiters writers tokens
-- ARGV: token wake_prefix wake_ttl_ms
-- queue and waiters: the --fair queue (lib/queue.lua); wake_prefix:
-- "P{K}:wake:"; writers: the exclusive requests readers wait for
-- (lib/shared.lua), which a plain waiter that gives up leaves too: if
-- readers waited for it alone, one of them is woken (tokens, a wake token
-- lasting wake_ttl_ms), and lets the others in.
-- RUNS: LINDEX queue 0; LREM queue 1 x; HDEL waiters x; TIME
-- RUNS: HGET waiters x; LPOP queue; SPUBLISH =wake_prefix+x x
-- RUNS: PUBSUB? SHARDNUMSUB =wake_prefix+x; PUBSUB? NUMSUB =wake_prefix+x
-- RUNS: PUBLISH? =wake_prefix+x x; ZREM writers x; LRANGE queue 0 0
-- RUNS: INFO? server; HSET? waiters x x
-- RUNS: ZCARD writers; LPUSH tokens 1; LTRIM tokens 0 0; PEXPIRE tokens 1
-- Returns 1 if we were queued, else 0.
local was_head = redis.call('LINDEX', k_queue, 0) == a_token
local n = redis.call('LREM', k_queue, 1, a_token)
queue_left(k_queue, k_waiters, a_token)
if redis.call('ZREM', k_writers, a_token) == 1 and
    redis.call('ZCARD', k_writers) == 0 then
  wake_plain(k_tokens, 1, 1, a_wake_ttl_ms)
end
if was_head then wake_queue(k_queue, k_waiters, a_wake_prefix) end
return n
