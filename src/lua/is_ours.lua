-- is_ours: does this token hold KEY right now? Reads only.
-- KEYS: lock sem shares
-- ARGV: token limit shared
-- limit: N; shared '1': the caller asks for a share (-s), shares: the
-- shares (lib/shared.lua).
-- RUNS mutex: GET lock; ZSCORE shares x; TIME
-- RUNS sem: ZSCORE sem x; TIME
-- Returns 1 when it does (mutex: P{KEY} holds the token; -N: the token's
-- slot ends after the server's now; -s: either, or the token's share
-- does), 2 when an exclusive request finds the token holding a share
-- (an upgrade, which rlock does not do), else 0.
-- Invariant: the rule of extend.lua, so a nested run re-enters only a
-- lock its holder could still extend, never an expired slot.
-- A refused read is named, though it could not half-write.
if a_limit == '1' then
  if redis.call('GET', k_lock) == a_token then return 1 end
  local score = redis.call('ZSCORE', k_shares, a_token)
  if not score or tonumber(score) <= server_ms() then return 0 end
  return a_shared == '1' and 1 or 2
end
local score = redis.call('ZSCORE', k_sem, a_token)
if not score then return 0 end
return tonumber(score) > server_ms() and 1 or 0
