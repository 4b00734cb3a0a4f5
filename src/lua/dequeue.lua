-- dequeue: a --fair waiter gives up (timeout, signal): leave the queue and,
-- if we were at its head, pass the turn on.
-- KEYS[1] queue  KEYS[2] our :w key   ARGV[1] token  ARGV[2] "P{K}:w:"
-- ARGV[3] "P{K}:wake:"
-- Returns 1 if we were queued, else 0.
acl_ask(function()
  acl_dequeue(KEYS[1], KEYS[2], ARGV[2], ARGV[3])
end)
if acl_refused then return acl_refused end
local was_head = redis.call('LINDEX', KEYS[1], 0) == ARGV[1]
local n = redis.call('LREM', KEYS[1], 1, ARGV[1])
redis.call('DEL', KEYS[2])
if was_head then wake_queue(KEYS[1], ARGV[2], ARGV[3]) end
return n
