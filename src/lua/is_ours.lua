-- is_ours: does this token hold KEY right now? Reads only.
-- KEYS: lock sem
-- ARGV: token limit
-- limit: N.
-- RUNS mutex: GET lock
-- RUNS sem: ZSCORE sem x; TIME
-- Returns 1 when it does (mutex: P{KEY} holds the token; -N: the token's
-- slot ends after the server's now), else 0.
-- Invariant: the rule of extend.lua, so a nested run re-enters only a
-- lock its holder could still extend, never an expired slot.
-- A refused read is named, though it could not half-write.
if a_limit == '1' then
  return redis.call('GET', k_lock) == a_token and 1 or 0
end
local score = redis.call('ZSCORE', k_sem, a_token)
if not score then return 0 end
return tonumber(score) > server_ms() and 1 or 0
