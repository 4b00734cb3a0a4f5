-- dequeue: a --fair waiter gives up (timeout, signal): leave the queue and,
-- if we were at its head, pass the turn on.
-- KEYS: queue waiters
-- ARGV: token wake_prefix
-- queue and waiters: the --fair queue (lib/queue.lua); wake_prefix:
-- "P{K}:wake:".
-- RUNS: LINDEX queue 0; LREM queue 1 x; HDEL waiters x; TIME
-- RUNS: HGET waiters x; LPOP queue; SPUBLISH =wake_prefix+x x
-- RUNS: PUBSUB? SHARDNUMSUB =wake_prefix+x; PUBSUB? NUMSUB =wake_prefix+x
-- RUNS: PUBLISH? =wake_prefix+x x
-- Returns 1 if we were queued, else 0.
local was_head = redis.call('LINDEX', k_queue, 0) == a_token
local n = redis.call('LREM', k_queue, 1, a_token)
redis.call('HDEL', k_waiters, a_token)
if was_head then wake_queue(k_queue, k_waiters, a_wake_prefix) end
return n
