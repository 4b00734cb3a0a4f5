-- dequeue: a waiter gives up (timeout, signal): a --fair one leaves the
-- queue and, if it was at its head, passes the turn on; a plain one takes
-- its mark out of P{K}:blocked (acquire.lua), so that nothing of it is
-- left.
-- KEYS[1] queue  KEYS[2] our :w key   ARGV[1] token  ARGV[2] "P{K}:w:"
-- ARGV[3] "P{K}:wake:"
-- Returns 1 if we were queued, else 0.
acl_ask(function()
  acl_dequeue(KEYS[1], KEYS[2], ARGV[2], ARGV[3])
end)
if acl_refused then return acl_refused end
redis.call('ZREM', string.sub(ARGV[2], 1, -3) .. 'blocked', ARGV[1])
local was_head = redis.call('LINDEX', KEYS[1], 0) == ARGV[1]
local n = redis.call('LREM', KEYS[1], 1, ARGV[1])
redis.call('DEL', KEYS[2])
if was_head then wake_queue(KEYS[1], ARGV[2], ARGV[3]) end
return n
