-- release: compare-and-delete, then wake whoever may take KEY now.
-- KEYS[1] lock  KEYS[2] holder meta  KEYS[3] sem  KEYS[4] limit
-- KEYS[5] queue   ARGV[1] token  ARGV[2] N  ARGV[3] "P{K}:wake"
-- ARGV[4] "P{K}:w:"  ARGV[5] "P{K}:wake:"
-- Returns 1 when released, 0 when KEY was not ours (nothing done).
-- Invariant: never deletes a lock held by another token. Wakes all
-- plain waiters (one channel) but only the live head of the --fair queue,
-- so a hand-off costs O(1) messages however many wait in line.
local token = ARGV[1]
if ARGV[2] == '1' then
  if redis.call('GET', KEYS[1]) ~= token then return 0 end
  redis.call('DEL', KEYS[1], KEYS[2])
else
  if redis.call('ZREM', KEYS[3], token) == 0 then return 0 end
  redis.call('DEL', KEYS[2])
  if redis.call('ZCARD', KEYS[3]) == 0 then
    redis.call('DEL', KEYS[3], KEYS[4])
  end
end
redis.call('PUBLISH', ARGV[3], 'released')
local head = redis.call('LINDEX', KEYS[5], 0)
while head and redis.call('EXISTS', ARGV[4] .. head) == 0 do
  redis.call('LPOP', KEYS[5])
  head = redis.call('LINDEX', KEYS[5], 0)
end
if head then redis.call('PUBLISH', ARGV[5] .. head, 'turn') end
return 1
