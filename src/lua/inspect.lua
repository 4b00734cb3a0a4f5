-- inspect: all that `rlock status` and `rlock list` show about one KEY.
-- KEYS: lock meta sem limit queue last
-- ARGV: meta_prefix waiter_prefix wake_prefix waiters_shown
-- meta: the mutex's; last: the last run; the prefixes "P{K}:meta:",
-- "P{K}:w:" and "P{K}:wake:"; waiters_shown: how many to describe.
-- Returns {now, mode, limit, holders, queued, waiters, last}:
--   now      server time, ms since the epoch
--   mode     'mutex', 'semaphore' or 'free'
--   limit    the N of the semaphore, 1 for a mutex, 0 when free
--   holders  {{lease left ms (-1: no expiry), user, host, pid, cmd, since,
--            lease, fence, ended, exit, hold_until}, ...}, strings ''
--            where rlock wrote nothing (the last three are set once the
--            run ended and --min-hold keeps KEY); semaphore holders
--            soonest-expiring first
--   queued   live --fair waiters (entries past the first 1000 uncounted
--            for liveness, counted as they are)
--   waiters  the first waiters_shown live waiters, {{user, host, pid, cmd}, ...}
--   last     {} when no run is recorded, else the LAST fields of P{K}:last
--            (lib/record.lua), '' where absent
-- Invariant: writes nothing, so looking never changes a lock's fate (and
-- works on a replica). Run with EVALSHA_RO/EVAL_RO (script.c), which
-- Redis 7 answers during CLIENT PAUSE WRITE; no shebang flags, as Redis 6
-- (plain EVALSHA there) cannot compile them.
acl_ask(function()
  acl('TIME')
  acl('GET', k_lock)
  acl('PTTL', k_lock)
  acl('HMGET', k_meta, 'user')
  acl('ZRANGEBYSCORE', k_sem, '0', '0')
  acl('GET', k_limit)
  acl('HMGET', a_meta_prefix .. 'x', 'user')
  acl('LLEN', k_queue)
  acl('LRANGE', k_queue, '0', '0')
  acl('GET', a_waiter_prefix .. 'x')
end)
if acl_refused then return acl_refused end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local FIELDS = {'user', 'host', 'pid', 'cmd', 'since', 'lease', 'fence',
  'ended', 'exit', 'hold_until'}
local LAST = {'user', 'host', 'pid', 'cmd', 'started', 'ended', 'exit',
  'fence', 'lost', 'ok_ended', 'skips', 'skip_fence', 'skip_user',
  'skip_host', 'skip_pid', 'skip_at'}

local function holder(pttl, meta)
  local m = redis.call('HMGET', meta, unpack(FIELDS))
  local h = {pttl}
  for i = 1, #FIELDS do h[i + 1] = m[i] or '' end
  return h
end

local mode, limit, holders = 'free', 0, {}
if redis.call('GET', k_lock) then
  mode, limit = 'mutex', 1
  holders[1] = holder(redis.call('PTTL', k_lock), k_meta)
else
  local sem = redis.call('ZRANGEBYSCORE', k_sem,
    string.format('(%d', now), '+inf', 'WITHSCORES')
  if #sem > 0 then
    mode = 'semaphore'
    limit = tonumber(redis.call('GET', k_limit) or '0') or 0
    for i = 1, #sem, 2 do
      holders[#holders + 1] = holder(tonumber(sem[i + 1]) - now,
        a_meta_prefix .. sem[i])
    end
  end
end

-- Dead waiters stay in the list until they reach its head: skip them
-- (no :w key, or nobody listening on its wake channel: queue.lua). On a
-- replica nobody listens (waiters subscribe on the master): there a :w
-- key alone says a waiter is queued. A user without INFO is taken to be
-- on a master.
local wakepre = a_wake_prefix
local info = redis.pcall('INFO', 'replication')
local on_replica = type(info) == 'string' and
  string.find(info, 'role:slave', 1, true) ~= nil
local qlen = redis.call('LLEN', k_queue)
local walk = math.min(qlen, 1000)
local queued, waiters, want = qlen - walk, {}, tonumber(a_waiters_shown)
if walk > 0 then
  for _, tok in ipairs(redis.call('LRANGE', k_queue, 0, walk - 1)) do
    local v = redis.call('GET', a_waiter_prefix .. tok)
    if v and (on_replica or subscribed(wakepre .. tok)) then
      queued = queued + 1
      if #waiters < want then
        -- "user\31host\31pid\31cmd"; cmd may hold \31 itself.
        local w, s = {}, 1
        for i = 1, 3 do
          local e = string.find(v, '\31', s, true)
          if not e then break end
          w[i], s = string.sub(v, s, e - 1), e + 1
        end
        for i = #w + 1, 3 do w[i] = '' end
        w[4] = string.sub(v, s)
        waiters[#waiters + 1] = w
      end
    end
  end
end
local last = {}
if redis.call('EXISTS', k_last) == 1 then
  last = redis.call('HMGET', k_last, unpack(LAST))
  for i = 1, #LAST do last[i] = last[i] or '' end
end
return {now, mode, limit, holders, queued, waiters, last}
