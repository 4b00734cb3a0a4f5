-- dequeue: a --fair waiter gives up (timeout, signal): leave the queue and,
-- if we were at its head, pass the turn on.
-- KEYS: queue waiter
-- ARGV: token waiter_prefix wake_prefix
-- waiter: our :w key; the prefixes "P{K}:w:" and "P{K}:wake:".
-- Returns 1 if we were queued, else 0.
acl_ask(function()
  acl_dequeue(k_queue, k_waiter, a_waiter_prefix, a_wake_prefix)
end)
if acl_refused then return acl_refused end
local was_head = redis.call('LINDEX', k_queue, 0) == a_token
local n = redis.call('LREM', k_queue, 1, a_token)
redis.call('DEL', k_waiter)
if was_head then wake_queue(k_queue, a_waiter_prefix, a_wake_prefix) end
return n
