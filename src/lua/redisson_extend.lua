-- redisson_extend: Redisson's watchdog renewal, for our field only.
-- KEYS: lock meta
-- ARGV: field lease_ms
-- lock: the hash at KEY (lib/redisson.lua); meta: our holder record.
-- RUNS: HEXISTS lock x; PEXPIRE lock 1; PEXPIRE meta 1
-- Returns 1 when extended, 0 when our field is gone (the lock was lost:
-- released by force, or its lease ran out).
-- Invariant: never extends KEY while another client holds it.
if redis.call('HEXISTS', k_lock, a_field) == 0 then return 0 end
redis.call('PEXPIRE', k_lock, a_lease_ms)
redis.call('PEXPIRE', k_meta, a_lease_ms)
return 1
