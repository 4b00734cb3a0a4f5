-- release: compare-and-delete, then wake the waiters.
-- KEYS[1] lock  KEYS[2] meta   ARGV[1] token  ARGV[2] wake channel
-- Returns 1 when released, 0 when the lock was not ours (nothing done).
-- Invariant: never deletes a lock held by another token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0
