
-- record.lua: embedded in front of every script that calls it. The last
-- finished run of KEY, one hash P{K}:last, written by whoever ends a run
-- (release.lua, or record.lua when the lock was lost) and counted against
-- by the runs that were skipped (record.lua).
-- Fields: user host pid cmd started ended (server ms) exit (rlock's exit
-- status) fence lost (1: the lease was lost); ok_ended, when the last run
-- that exited 0 with its lease ended (kept across failed runs); skips,
-- how many runs were not obtained since the grant whose fence is
-- skip_fence, and who skipped last: skip_user skip_host skip_pid skip_at.
-- Each write sets the hash's expiry to ttl ms anew: it outlives the next
-- run of a monthly job.

-- Record the run f = {user, host, pid, cmd, started, fence} that ended at
-- now with rlock status `exit` and lost '0'/'1'. The skips counted against
-- this run's grant stay with it, and so do those of a later grant (a run
-- that lost its lease may be recorded after the next one began); older
-- ones are reset. A record of a later grant is never replaced.
local function record_run(last, f, now, exit, lost, ttl)
  local r = redis.call('HMGET', last, 'fence', 'skip_fence', 'skips')
  local ours = tonumber(f[6] or '')
  local lf, sf = tonumber(r[1] or ''), tonumber(r[2] or '')
  if ours and lf and lf > ours then return end
  local kept = sf and ours and sf >= ours
  local v = {'user', f[1] or '', 'host', f[2] or '', 'pid', f[3] or '',
    'cmd', f[4] or '', 'started', f[5] or '', 'ended', now, 'exit', exit,
    'fence', f[6] or '', 'lost', lost}
  if exit == '0' and lost == '0' then
    v[#v + 1] = 'ok_ended'
    v[#v + 1] = now
  end
  -- Already reset (skips '0', skip_fence empty: only this reset writes
  -- both): six fields fewer to write on every release of a KEY that
  -- nobody skipped.
  if not kept and (r[3] ~= '0' or r[2] ~= '') then
    for _, x in ipairs({'skips', '0', 'skip_fence', '', 'skip_user', '',
        'skip_host', '', 'skip_pid', '', 'skip_at', ''}) do
      v[#v + 1] = x
    end
  end
  redis.call('HSET', last, unpack(v))
  redis.call('PEXPIRE', last, ttl)
end

-- Server time in ms, as a decimal string.
local function now_ms()
  return string.format('%d', server_ms())
end
