-- redisson_inspect: all that `rlock status --redisson` shows about one
-- KEY: Redisson's lock (lib/redisson.lua), rlock's record of its own
-- holder, the fair queue and the last run.
-- KEYS: lock meta queue timeouts waiters last
-- ARGV: waiters_shown
-- meta: rlock's holder record; waiters_shown: how many waiters to
-- describe.
-- RUNS: TIME; EXISTS lock; PTTL lock; HGETALL meta; HGETALL lock
-- RUNS: LRANGE queue 0 0; ZSCORE timeouts x; HGET waiters x
-- RUNS: EXISTS last; HMGET last user
-- inspect.lua's reply, by the same names:
-- REPLY: now mode limit holders queued waiters last writers
-- REPLY holders: lease_left user host pid cmd since lease fence ended exit
-- REPLY holders: hold_until owner count
-- REPLY waiters: user host pid cmd
-- REPLY last: user host pid cmd started ended exit fence lost ok_ended
-- REPLY last: skips skip_fence skip_user skip_host skip_pid skip_at
-- mode is 'redisson' when KEY is held, else 'free'; the holder's owner
-- is its ID:THREAD field and count its re-entries, and the rest of its
-- fields rlock's record when the holder is rlock ('' otherwise); a
-- waiter of Redisson's own is shown by its field as cmd.
-- Invariant: writes nothing, as inspect.lua.
local now = server_ms()
local mode, limit, holders = 'free', 0, {}
if redis.call('EXISTS', k_lock) == 1 then
  mode, limit = 'redisson', 1
  local pttl = redis.call('PTTL', k_lock)
  local m, f = redis.call('HGETALL', k_meta), redis.call('HGETALL', k_lock)
  local mf = {}
  for i = 1, #m, 2 do mf[m[i]] = m[i + 1] end
  for i = 1, #f, 2 do
    local h = {pttl}
    local ours = mf.field == f[i]
    for j = 2, #r_holders do h[j] = ours and mf[r_holders[j]] or '' end
    h[#r_holders - 1], h[#r_holders] = f[i], f[i + 1]
    holders[#holders + 1] = h
  end
end
local queued, waiters, want = 0, {}, tonumber(a_waiters_shown)
for _, f in ipairs(redis.call('LRANGE', k_queue, 0, -1)) do
  local t = redis.call('ZSCORE', k_timeouts, f)
  if not t or tonumber(t) > now then
    queued = queued + 1
    if #waiters < want then
      local v = redis.call('HGET', k_waiters, f)
      local w = {'', '', '', f}
      if v then
        -- "due\31user\31host\31pid\31cmd"; cmd may hold \31 itself.
        local s = (string.find(v, '\31', 1, true) or #v) + 1
        for i = 1, 3 do
          local e = string.find(v, '\31', s, true)
          if not e then break end
          w[i], s = string.sub(v, s, e - 1), e + 1
        end
        w[4] = string.sub(v, s)
      end
      waiters[#waiters + 1] = w
    end
  end
end
local last = last_read(k_last, r_last)
return reply({now = now, mode = mode, limit = limit, holders = holders,
  queued = queued, waiters = waiters, last = last, writers = 0})
