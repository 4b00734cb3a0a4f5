-- release: compare-and-delete, then wake whoever may take KEY now.
-- KEYS[1] lock  KEYS[2] holder meta  KEYS[3] sem  KEYS[4] limit
-- KEYS[5] queue  KEYS[6] wake tokens   ARGV[1] token  ARGV[2] N
-- ARGV[3] "P{K}:wake"  ARGV[4] "P{K}:w:"  ARGV[5] "P{K}:wake:"
-- ARGV[6] wake token ttl ms
-- Returns 1 when released, 0 when KEY was not ours (nothing done);
-- refused with RLOCK_NOPERM (acl.lua), nothing done, when the ACL lacks a
-- permission it needs.
-- Invariant: never deletes a lock held by another token. Wakes one
-- plain waiter (the oldest BLPOP on KEYS[6]; at most N tokens wait there)
-- and only the live head of the --fair queue (and the one after it), so a
-- hand-off costs O(1) messages however many wait. The message on P{K}:wake is for anyone else
-- who wants to know.
local token = ARGV[1]
-- Checked before the DEL: a wake-up refused after it would leave the
-- waiters to the lease's end.
local refused = acl_refusal(acl_release(KEYS[1], KEYS[2], KEYS[3], KEYS[4],
  KEYS[5], KEYS[6], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[2])))
if refused then return refused end
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
publish(ARGV[3], 'released')
wake_plain(KEYS[6], 1, tonumber(ARGV[2]), ARGV[6])
wake_queue(KEYS[5], ARGV[4], ARGV[5])
return 1
