-- redisson_is_ours: does our field hold KEY right now? Reads only.
-- KEYS: lock
-- ARGV: field
-- lock: the hash at KEY (lib/redisson.lua).
-- RUNS: HEXISTS lock x
-- Returns 1 when it does, else 0.
-- Invariant: the rule of redisson_extend.lua: a nested run re-enters only
-- a lock its holder could still extend.
return redis.call('HEXISTS', k_lock, a_field)
