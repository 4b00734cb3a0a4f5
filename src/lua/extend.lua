-- extend: renew the lease, but only for the token that holds it.
-- KEYS: lock meta metas sem limit queue shares
-- ARGV: token lease_ms limit shared
-- meta: a mutex holder's, metas: the -N holders' and the shares'
-- (lib/meta.lua); limit: N; shared '1': the token's share in shares
-- (lib/shared.lua).
-- RUNS mutex: GET lock; PEXPIRE lock 1; PEXPIRE meta 1
-- RUNS sem: TIME; ZSCORE sem x; ZREM sem x; HDEL metas x; ZADD sem 1 x
-- RUNS sem: ZRANGE sem 0 0; PEXPIRE sem 1; PEXPIRE limit 1
-- RUNS sem: PEXPIRE metas 1
-- RUNS: PTTL queue; PEXPIRE queue 1
-- RUNS shared: TIME; ZSCORE shares x; ZREM shares x; HDEL metas x
-- RUNS shared: ZADD shares 1 x; ZRANGE shares 0 0; GET lock
-- RUNS shared: PEXPIRE lock 1; PEXPIRE shares 1; PEXPIRE metas 1
-- RUNS shared: ZCARD shares; DEL lock; DEL shares metas
-- Returns 1 when extended, 0 when KEY is not ours (any more); refused with
-- RLOCK_NOPERM, writing nothing, when the ACL lacks a permission.
-- Invariant: never extends a lock held by another token. Also keeps the
-- --fair queue alive while waiters sleep behind us (its waiters' entries
-- are theirs to refresh).
local token, lease = a_token, tonumber(a_lease_ms)
local shared = a_shared == '1'
if a_limit == '1' and not shared then
  if redis.call('GET', k_lock) ~= token then return 0 end
  redis.call('PEXPIRE', k_lock, a_lease_ms)
  redis.call('PEXPIRE', k_meta, a_lease_ms)
else
  -- Our slot or share alone: the others' leases are theirs to renew, so
  -- a dead holder's ends with its own lease.
  local slots = shared and k_shares or k_sem
  local now = server_ms()
  local score = redis.call('ZSCORE', slots, token)
  if not score or tonumber(score) <= now then
    redis.call('ZREM', slots, token)
    meta_drop(k_metas, token)
    return 0
  end
  redis.call('ZADD', slots, now + lease, token)
  if shared then
    shares_settle(k_lock, k_shares, k_metas, now)
  else
    sem_expiry(k_sem, k_limit, k_metas, now)
  end
end
local q = redis.call('PTTL', k_queue)
if q >= 0 and q < 2 * lease then
  redis.call('PEXPIRE', k_queue, 2 * lease)
end
return 1
