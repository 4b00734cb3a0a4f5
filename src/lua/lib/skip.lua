-- skip.lua: embedded in front of every script that calls it. A run not
-- obtained counts itself in P{K}:last (the hash of lib/record.lua), apart
-- from record.lua's functions, so the scripts that count skips make no
-- closures of them: acquire.lua (-n), record.lua (--timeout ran out).

-- Count a run not obtained (-n, or --timeout ran out) against the grant
-- whose fence is `fence` (the holder that made it skip, or the run that
-- held KEY last: the fence counter), given r, last's skip_fence and skips
-- (HMGET, read by the caller): a count with another fence starts afresh,
-- and the run of that grant keeps it when it is recorded.
-- user host pid: who skipped; now: server ms, a string.
local function record_skip(last, r, fence, user, host, pid, now, ttl)
  if r[1] == fence then
    redis.call('HSET', last, 'skips', string.format('%d',
      (tonumber(r[2]) or 0) + 1), 'skip_user', user, 'skip_host', host,
      'skip_pid', pid, 'skip_at', now)
  else
    redis.call('HSET', last, 'skips', '1', 'skip_fence', fence,
      'skip_user', user, 'skip_host', host, 'skip_pid', pid, 'skip_at', now)
  end
  redis.call('PEXPIRE', last, ttl)
end
