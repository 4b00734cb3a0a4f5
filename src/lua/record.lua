-- record: what release.lua cannot record, since no release happens: a run
-- whose lease was lost, or a run that was skipped (not obtained: -n, or
-- --timeout ran out).
-- KEYS[1] last run (P{K}:last)  KEYS[2] fence counter
-- ARGV[1] 'lost' or 'skip'  ARGV[2] user  ARGV[3] host  ARGV[4] pid
-- ARGV[5] cmd  ARGV[6] last run ttl ms; for 'lost': ARGV[7] fence
-- ARGV[8] ms since the grant, by the holder's clock  ARGV[9] exit status
-- Returns 1.
-- Invariants: touches P{K}:last only, never the lock. A skip counts
-- against the latest grant of KEY (the fence counter: the holder that made
-- us skip, or the run that held KEY last): a new grant starts the count
-- afresh, and the run it belongs to keeps it when it is recorded.
local now = now_ms()
if ARGV[1] == 'lost' then
  local started = string.format('%d', tonumber(now) - tonumber(ARGV[8]))
  record_run(KEYS[1], {ARGV[2], ARGV[3], ARGV[4], ARGV[5], started,
    ARGV[7]}, now, ARGV[9], '1', ARGV[6])
  return 1
end
local fence = redis.call('GET', KEYS[2]) or ''
if redis.call('HGET', KEYS[1], 'skip_fence') ~= fence then
  redis.call('HSET', KEYS[1], 'skips', '0', 'skip_fence', fence)
end
redis.call('HINCRBY', KEYS[1], 'skips', 1)
redis.call('HSET', KEYS[1], 'skip_user', ARGV[2], 'skip_host', ARGV[3],
  'skip_pid', ARGV[4], 'skip_at', now)
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1
