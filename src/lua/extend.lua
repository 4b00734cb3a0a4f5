-- extend: renew the lease, but only for the token that holds it.
-- KEYS[1] lock  KEYS[2] meta   ARGV[1] token  ARGV[2] lease ms
-- Returns 1 when extended, 0 when the lock is not ours (any more).
-- Invariant: never extends a lock held by another token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0
