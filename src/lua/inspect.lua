-- inspect: all that `rlock status` and `rlock list` show about one KEY.
-- KEYS: lock meta metas sem limit queue waiters last shares writers
-- ARGV: wake_prefix waiters_shown
-- meta: a mutex holder's, metas: the -N holders' (lib/meta.lua); queue
-- and waiters: the --fair queue (lib/queue.lua); last: the last run;
-- wake_prefix: "P{K}:wake:"; waiters_shown: how many to describe.
-- RUNS: TIME; GET lock; PTTL lock; HMGET meta user
-- RUNS: ZRANGEBYSCORE sem 0 0; ZRANGEBYSCORE shares 0 0; ZCOUNT writers 0 0
-- RUNS: GET limit; HMGET metas x; LLEN queue; LRANGE queue 0 0
-- RUNS: HGET waiters x; EXISTS last; HMGET last user; INFO? replication
-- RUNS: PUBSUB? SHARDNUMSUB =wake_prefix+x; PUBSUB? NUMSUB =wake_prefix+x
-- RUNS: INFO? server
-- The reply, by these names (lua-text.sh makes reply() and the lists
-- r_holders, r_waiters, r_last of them; embed-lua.sh C's
-- INSPECT_R_NOW, INSPECT_HOLDERS_USER, ...):
-- REPLY: now mode limit holders queued waiters last writers
-- REPLY holders: lease_left user host pid cmd since lease fence ended exit
-- REPLY holders: hold_until owner count
-- REPLY waiters: user host pid cmd
-- REPLY last: user host pid cmd started ended exit fence lost ok_ended
-- REPLY last: skips skip_fence skip_user skip_host skip_pid skip_at
--   now      server time, ms since the epoch
--   mode     'mutex', 'semaphore', 'shared' or 'free'
--   limit    the N of the semaphore, 1 for a mutex, 0 when free or shared
--   holders  one array per holder: lease_left ms (-1: no expiry), then
--            the strings of its meta ('' where rlock wrote nothing: the
--            last three are set once the run ended and --min-hold keeps
--            KEY; owner and count, a Redisson holder's ID:THREAD and
--            re-entries, are redisson_inspect.lua's); semaphore holders
--            and shares soonest-expiring first
--   queued   live --fair waiters (entries past the first 1000 uncounted
--            for liveness, counted as they are)
--   waiters  the first waiters_shown live waiters
--   last     {} when no run is recorded, else the fields of P{K}:last
--            (lib/record.lua), '' where absent
--   writers  exclusive requests the readers of a shared KEY wait for
-- Invariant: writes nothing, so looking never changes a lock's fate (and
-- works on a replica). Run with EVALSHA_RO/EVAL_RO (script.c), which
-- Redis 7 answers during CLIENT PAUSE WRITE; no shebang flags, as Redis 6
-- (plain EVALSHA there) cannot compile them.
local now = server_ms()

-- The holder of meta key mk (tok: a -N holder's, in metas) whose lease
-- ends in pttl ms.
local function holder(pttl, mk, tok)
  local m = meta_get(mk, tok, unpack(r_holders, 2))
  local h = {pttl}
  for i = 2, #r_holders do h[i] = m[i - 1] or '' end
  return h
end

local mode, limit, holders = 'free', 0, {}
local cur = redis.call('GET', k_lock)
if cur == 'shared' then
  -- A share whose lease ended is not shown, though the next write takes
  -- it away only then (lib/shared.lua).
  local sh = redis.call('ZRANGEBYSCORE', k_shares,
    string.format('(%d', now), '+inf', 'WITHSCORES')
  if #sh > 0 then mode = 'shared' end
  for i = 1, #sh, 2 do
    holders[#holders + 1] = holder(tonumber(sh[i + 1]) - now, k_metas,
      sh[i])
  end
elseif cur then
  mode, limit = 'mutex', 1
  holders[1] = holder(redis.call('PTTL', k_lock), k_meta)
else
  local sem = redis.call('ZRANGEBYSCORE', k_sem,
    string.format('(%d', now), '+inf', 'WITHSCORES')
  if #sem > 0 then
    mode = 'semaphore'
    limit = tonumber(redis.call('GET', k_limit) or '0') or 0
    for i = 1, #sem, 2 do
      holders[#holders + 1] = holder(tonumber(sem[i + 1]) - now, k_metas,
        sem[i])
    end
  end
end

-- Dead waiters stay in the list until they reach its head: skip them (an
-- entry no longer due, or nobody listening on its wake channel:
-- lib/queue.lua). On a replica nobody listens (waiters subscribe on the
-- master): there an entry due alone says a waiter is queued, and so it
-- does right after the server changed under the queue, while its
-- waiters come back (queue_server). A user without INFO is taken to be
-- on a master that did not change.
local info = redis.pcall('INFO', 'replication')
local on_replica = type(info) == 'string' and
  string.find(info, 'role:slave', 1, true) ~= nil
local grace = nil
local qlen = redis.call('LLEN', k_queue)
local walk = math.min(qlen, 1000)
local queued, waiters, want = qlen - walk, {}, tonumber(a_waiters_shown)
if walk > 0 then
  for _, tok in ipairs(redis.call('LRANGE', k_queue, 0, walk - 1)) do
    local v = redis.call('HGET', k_waiters, tok)
    local due = entry_due(v)
    local live = due and due > now
    if live and not on_replica and not subscribed(a_wake_prefix .. tok) then
      if grace == nil then
        grace = queue_server(k_waiters, now, 'look') or false
      end
      live = grace
    end
    if live then
      queued = queued + 1
      if #waiters < want then
        -- "due\31user\31host\31pid\31cmd"; cmd may hold \31 itself.
        local w, s = {}, string.find(v, '\31', 1, true)
        s = s and s + 1 or #v + 1
        for i = 1, #r_waiters - 1 do
          local e = string.find(v, '\31', s, true)
          if not e then break end
          w[i], s = string.sub(v, s, e - 1), e + 1
        end
        for i = #w + 1, #r_waiters - 1 do w[i] = '' end
        w[#r_waiters] = string.sub(v, s)
        waiters[#waiters + 1] = w
      end
    end
  end
end
local last = last_read(k_last, r_last)
local writers = redis.call('ZCOUNT', k_writers, string.format('(%d', now),
  '+inf')
return reply({now = now, mode = mode, limit = limit, holders = holders,
  queued = queued, waiters = waiters, last = last, writers = writers})
