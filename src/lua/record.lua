-- record: what release.lua cannot record, since no release happens: a run
-- whose lease was lost, or a run that was skipped (not obtained: -n, or
-- --timeout ran out).
-- KEYS: last fence
-- ARGV: what user host pid cmd last_ttl_ms fence? ran_ms? exit?
-- last: P{K}:last; fence: the fence counter; what: 'lost' or 'skip';
-- for 'lost' only: fence (ARGV) the run's, ran_ms: ms since the grant by
-- the holder's clock, exit: rlock's exit status.
-- RUNS: TIME; HMGET last f; HSET last f v; PEXPIRE last 1; GET fence
-- PRECHECK: none (the acquire asked for all of this; a refusal changes
-- nothing but the record)
-- Returns 1.
-- Invariants: touches P{K}:last only, never the lock. A skip counts
-- against the latest grant of KEY (the fence counter: the holder that made
-- us skip, or the run that held KEY last): a new grant starts the count
-- afresh, and the run it belongs to keeps it when it is recorded.
local now = now_ms()
if a_what == 'lost' then
  local started = string.format('%d', tonumber(now) - tonumber(a_ran_ms))
  record_run(k_last, {a_user, a_host, a_pid, a_cmd, started,
    a_fence}, now, a_exit, '1', a_last_ttl_ms)
  return 1
end
record_skip(k_last, redis.call('HMGET', k_last, 'skip_fence', 'skips'),
  redis.call('GET', k_fence) or '', a_user, a_host, a_pid, now,
  a_last_ttl_ms)
return 1
