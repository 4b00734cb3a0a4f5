-- acquire: take KEY (mutex, a share of it, or one of N semaphore slots)
-- for a token, or say how long to wait and where we stand in the --fair
-- queue.
-- KEYS: lock meta metas fence sem limit queue waiters turn last tokens
-- KEYS: shares writers wtokens
-- ARGV: token lease_ms host pid user cmd fence_ttl_ms limit join
-- ARGV: wake_prefix waiter_ttl_ms want_holder look_ms needs turn_ms wake
-- ARGV: shared writer_ttl_ms wake_ttl_ms skip_ttl_ms fence_proposed?
-- meta: a mutex holder's, metas: the -N holders' (lib/meta.lua); queue
-- and waiters: the --fair queue (lib/queue.lua); turn: P{K}:turn, "TOKEN
-- DUE", the queue head whose turn runs out at DUE; last: P{K}:last, where
-- a run not obtained counts itself (record.lua's skip), and tokens:
-- P{K}:tok, what plain waiters BLPOP: only asked about here. limit is N;
-- join '1': join the queue; wake_prefix: "P{K}:wake:"; want_holder '1':
-- return the holder's meta when busy; look_ms: ms between looks at a
-- queue head that has yet to take a free KEY; needs: what else the caller
-- runs while it waits, 'w' BLPOP (a plain or --redlock waiter), 'f'
-- SSUBSCRIBE and dequeue (a --fair one); turn_ms: ms a live queue head
-- has to take a free KEY (its turn) before it is passed over; wake: the
-- channel P{K}:wake; fence_proposed: a fence the caller proposes
-- (--redlock: its clock a little ahead, so that every master draws the
-- same one: quorum.c). shared '1': a share (-s; lib/shared.lua), with
-- limit 1: shares, the sorted set of the shares; writers, the exclusive
-- requests readers wait for, each there writer_ttl_ms from its last
-- attempt; wtokens, the wake tokens only those BLPOP. wake_ttl_ms: how
-- long a wake token a grant leaves for the next plain waiter lasts.
-- skip_ttl_ms: '' for a caller that may wait; else the caller will not
-- (-n), and a busy KEY counts its run as skipped in last (lib/skip.lua,
-- as record.lua would), last then expiring in skip_ttl_ms, with the
-- holder in the busy reply when it is one exclusive holder.
-- What it runs, and what the holder and waiter will run later (the
-- scripts named with @, and the commands rlock sends itself), asked
-- before any write (lua-text.sh): refused with RLOCK_NOPERM, writing
-- nothing, when the caller's ACL lacks one, not at the release; but
-- the head below, for a caller that will not wait, asks only what it
-- writes.
-- PRECHECK: called
-- RUNS: EVALSHA x 0; EVAL x 0; TIME; GET fence; SET fence 1 PX 1
-- RUNS: GET turn; SET turn x PX 1; DEL turn; HDEL waiters x; @record
-- RUNS: LINDEX queue 0; LPOP queue; HGET waiters x; INFO? server
-- RUNS: HSET? waiters x x
-- RUNS: PUBSUB? SHARDNUMSUB =wake_prefix+x; PUBSUB? NUMSUB =wake_prefix+x
-- RUNS mutex: ZCOUNT sem 0 0; GET limit; GET lock; PTTL lock
-- RUNS mutex: PEXPIRE lock 1; PEXPIRE meta 1; HGET meta f
-- RUNS mutex: EXISTS meta; DEL turn meta; SET lock x PX 1; HSET meta f v
-- RUNS mutex: HMGET meta user; ZRANGE shares 0 0; HMGET metas x
-- RUNS sem: EXISTS lock; EXISTS meta; ZRANGEBYSCORE sem 0 0
-- RUNS sem: HDEL metas x; ZREMRANGEBYSCORE sem 0 0; GET limit; ZCARD sem
-- RUNS sem: ZSCORE sem x; ZADD sem 1 x; PTTL metas; PEXPIRE metas 1
-- RUNS sem: HGET metas x; ZRANGE sem 0 0; SET limit 1; PEXPIRE sem 1
-- RUNS sem: PEXPIRE limit 1; HSET metas f v; SPUBLISH =wake_prefix+x x
-- RUNS fair: LPOS queue x; RPUSH queue x; HSET waiters x x
-- RUNS fair: PTTL queue; PEXPIRE queue 1; PTTL waiters; PEXPIRE waiters 1
-- RUNS fair: SSUBSCRIBE =wake_prefix+x; PUBSUB NUMSUB =wake_prefix+x
-- RUNS fair: PUBSUB SHARDNUMSUB =wake_prefix+x; INFO server
-- RUNS fair: @dequeue; @heartbeat
-- RUNS blpop: BLPOP wtokens tokens 0; EXISTS writers; ZADD writers 1 x
-- RUNS blpop: ZREM writers x; PEXPIRE writers 1
-- RUNS shared: ZSCORE shares x; ZADD shares 1 x; ZRANGE shares 0 0
-- RUNS shared: PEXPIRE shares 1; PEXPIRE metas 1; HGET metas x
-- RUNS shared: ZRANGEBYSCORE shares 0 0; ZREMRANGEBYSCORE shares 0 0
-- RUNS shared: HDEL metas x; ZREMRANGEBYSCORE writers 0 0; ZCARD writers
-- RUNS shared: ZCARD shares; LRANGE queue 0 0; LREM queue 1 x
-- RUNS shared: HSET metas f v; DEL shares metas; LPUSH tokens 1
-- RUNS shared: LTRIM tokens 0 0; PEXPIRE tokens 1
-- RUNS: SPUBLISH =wake x; SPUBLISH =wake_prefix+x x
-- RUNS: PUBLISH? =wake_prefix+x x; @extend; @release; @is_ours
-- RUNS mutex,blpop: @dequeue
-- Returns {1, fence} when the caller holds KEY; else the busy reply,
-- whose elements C reads by these names (ACQUIRE_BUSY_WAIT, ...):
-- REPLY busy: got wait position user host pid cmd since now lease_left
-- REPLY busy: foreign ended writer
-- got 0; wait: ms until trying again makes sense (-1: a holder key
-- without expiry); position in the queue (0 = next, -1 not queued); the
-- holder's user, host, pid, cmd and since (when asked for; for -s the
-- share that ends last); now: the server's ms; lease_left: the holder's
-- ms (for -N the soonest to end, for -s the last; -1 no expiry, -2
-- nobody holds KEY: a --fair waiter ahead of us is taking its turn, or a
-- writer readers wait for); foreign: 1 when the holder is not rlock (KEY
-- without :meta: its release wakes nobody); ended: when the holder's run
-- ended ('' while it runs: only --min-hold keeps KEY after that); writer:
-- 1 when readers now wait for us (writers: the waiter takes that back
-- with dequeue.lua if it gives up), 2 when we wait for a writer.
-- Invariants: at most N holders, or any number of shares and no other
-- holder; a token already holding is a harmless retry or a nested run
-- and never shortens its lease; nobody overtakes a live queue head (one
-- that takes its turn in time), and a reader never overtakes a writer
-- that waits (writers, or an exclusive request ahead in the queue);
-- fence = max(last + 1, server ms, the fence proposed but at most 1 s
-- past server ms), one counter for every mode.

-- The head (lua-text.sh: made before most libraries and the pre-check):
-- KEY held by another mutex holder, what a run that will not wait finds
-- most (a cron fleet's minute: every host but one). Nothing the rest
-- does could change the answer: KEY is not free, so nobody takes it, a
-- --fair head's turn starts only at a free KEY, and this caller joins
-- no queue and no writers; which mode KEY is in need not be asked
-- either (a semaphore is refused while KEY is set, and KEY while it has
-- slots). The skip counts against the holder's grant (its meta's fence;
-- the counter's when there is none). Asked of the ACL: only the count's
-- writes. A refusal, or any error, before them ends the head and the
-- rest, pre-check first, answers as it would without one.
if a_skip_ttl_ms ~= '' and a_limit == '1' and a_shared ~= '1' then
  local function look()
    local cur = redis.call('GET', k_lock)
    if not cur or cur == a_token or cur == 'shared' then return nil end
    local can = redis.acl_check_cmd
    if can and not (can('HSET', k_last, 'f', 'v') and
        can('PEXPIRE', k_last, '1')) then
      return nil
    end
    local m = redis.call('HMGET', k_meta, 'user', 'host', 'pid', 'cmd',
      'since', 'ended', 'fence')
    local foreign = not m[1] and redis.call('EXISTS', k_meta) == 0
    return m, redis.call('PTTL', k_lock), server_ms(), foreign,
      m[7] or redis.call('GET', k_fence) or '',
      redis.call('HMGET', k_last, 'skip_fence', 'skips')
  end
  local ok, m, wait, now, foreign, fence, counted = pcall(look)
  if ok and m then
    local nows = string.format('%d', now)
    record_skip(k_last, counted, fence, a_user, a_host, a_pid, nows,
      a_skip_ttl_ms)
    return reply_busy({got = 0, wait = wait, position = -1,
      user = m[1] or '', host = m[2] or '', pid = m[3] or '',
      cmd = m[4] or '', since = m[5] or '', now = nows, lease_left = wait,
      foreign = foreign and 1 or 0, ended = m[6] or '', writer = 0})
  end
end
-- HEAD ENDS

local token, lease, n = a_token, tonumber(a_lease_ms), tonumber(a_limit)
local shared = a_shared == '1'
local plain_waiter = string.find(a_needs, 'w', 1, true) ~= nil
-- join '1': join the --fair queue (or stay in it); '2': the same, from a
-- waiter that subscribed again (its connection dropped: the server may
-- have changed under the queue, lib/queue.lua).
local join = a_join ~= '0'
-- On the paths every run takes, numbers go to redis.call as the strings
-- they came as, or formatted once: Redis prints a number argument with
-- "%.17g", a few thousand instructions each time.
local turn = k_turn
-- This holder's meta (lib/meta.lua).
local mkey, mtok = k_meta, nil
if n > 1 or shared then mkey, mtok = k_metas, token end

local skip = a_skip_ttl_ms ~= ''
local refused = acl_precheck()
if refused then return refused end
local now = server_ms()
local nows = string.format('%d', now)

-- RLOCK_ errors are whole sentences for the user (conn.c drops the code).
local SAME = '; every user of a KEY must give the same --limit'
local cur
if n == 1 then
  if redis.call('ZCOUNT', k_sem, nows, '+inf') > 0 then
    return redis.error_reply('RLOCK_MODE the key is in use as a semaphore ' ..
      '(--limit ' .. (redis.call('GET', k_limit) or '?') .. ')' .. SAME)
  end
  cur = redis.call('GET', k_lock)
  if cur == token then
    if redis.call('PTTL', k_lock) < lease then
      redis.call('PEXPIRE', k_lock, a_lease_ms)
      redis.call('PEXPIRE', k_meta, a_lease_ms)
    end
    return {1, tonumber(redis.call('HGET', k_meta, 'fence') or '0')}
  end
  if shared then
    -- A share already ours: a retry, or a nested run.
    local score = redis.call('ZSCORE', k_shares, token)
    if score and tonumber(score) > now then
      if tonumber(score) < now + lease then
        redis.call('ZADD', k_shares, now + lease, token)
        shares_settle(k_lock, k_shares, k_metas, now)
      end
      return {1, tonumber(redis.call('HGET', k_metas, token .. ':fence') or
        '0')}
    end
  end
else
  local held = redis.call('GET', k_lock)
  if held == 'shared' then
    return redis.error_reply('RLOCK_MODE the key is in use as a shared ' ..
      'lock (--shared), which --limit cannot count' .. SAME)
  end
  if held then
    -- An rlock mutex always has its meta.
    if redis.call('EXISTS', k_meta) == 0 then
      return redis.error_reply('RLOCK_FOREIGN the key is held by a ' ..
        'client other than rlock (a plain SET NX lock), which --limit ' ..
        'cannot share; only a mutex (no --limit) can wait for it')
    end
    return redis.error_reply('RLOCK_MODE the key is in use as a mutex ' ..
      '(without --limit)' .. SAME)
  end
  -- Slots whose lease ran out go, and their holders' metas with them.
  for _, tok in ipairs(redis.call('ZRANGEBYSCORE', k_sem, '-inf', now)) do
    meta_drop(k_metas, tok)
  end
  redis.call('ZREMRANGEBYSCORE', k_sem, '-inf', now)
  local lim = redis.call('GET', k_limit)
  if lim and tonumber(lim) ~= n and redis.call('ZCARD', k_sem) > 0 then
    return redis.error_reply('RLOCK_MODE the key is in use as a ' ..
      'semaphore with --limit ' .. lim .. SAME)
  end
  local score = redis.call('ZSCORE', k_sem, token)
  if score then
    if tonumber(score) < now + lease then
      redis.call('ZADD', k_sem, now + lease, token)
      if redis.call('PTTL', k_metas) < lease then
        redis.call('PEXPIRE', k_metas, lease)
      end
    end
    return {1, tonumber(redis.call('HGET', k_metas, token .. ':fence') or
      '0')}
  end
end

-- Dead waiters leave the queue when they reach its head (we are alive,
-- whatever our entry and subscription say: the entry is refreshed below
-- if we stay queued, and we may be trying before we subscribe). grace:
-- nobody hears the head yet, after the server changed; until when.
local head, grace, _ = redis.call('LINDEX', k_queue, '0'), nil, nil
if head and head ~= token then
  head, _, grace = live_head(k_queue, k_waiters, a_wake_prefix, now, head)
end

local free, wait, open
if n == 1 then
  -- KEY missing (GET said so above) is free: no PTTL to ask.
  wait = cur and redis.call('PTTL', k_lock) or -2
  free = wait == -2
  -- A share may join the shares; wait for the last of them otherwise.
  open = free or (shared and cur == 'shared')
else
  local first = redis.call('ZRANGE', k_sem, 0, 0, 'WITHSCORES')
  free = redis.call('ZCARD', k_sem) < n
  wait = first[2] and tonumber(first[2]) - now or -2
end
-- What a waiter shows as the lease left: wait may become what is left of
-- the queue head's turn below, which is no holder's lease.
local left = free and -2 or wait
local foreign, writer = 0, 0

-- A share is taken at once while KEY is free or shared, unless a writer
-- waits: an exclusive request of the --fair queue ahead of us (or in it
-- at all, for a request that is not queued), or one of writers, for a
-- request that is not --fair (a --fair one goes by the queue's order).
local take
if shared then
  shares_prune(k_shares, k_metas, now)
  local fair = string.find(a_needs, 'f', 1, true) or join
  take = open and (fair or writers_waiting(k_writers, now) == 0)
  if take and head then
    for _, tok in ipairs(redis.call('LRANGE', k_queue, 0, 999)) do
      if tok == token then break end
      local v = redis.call('HGET', k_waiters, tok)
      local due = entry_due(v)
      if due and due > now and not entry_shared(v) then
        take = false
        break
      end
    end
  end
  if open and not take and not fair then
    -- Waiting for a writer: try again when its claim would lapse (it
    -- takes KEY, or died).
    local w = redis.call('ZRANGE', k_writers, -1, -1, 'WITHSCORES')
    if w[2] then
      wait, writer = math.max(tonumber(w[2]) - now, 1), 2
      if free then left = -2 end
    end
  end
end

-- A free KEY is the live head's to take, within its turn: the first to
-- see it free starts the clock (a release wakes the head and the one
-- after it, who looks every look_ms). A head still there when its turn is
-- over is alive but not taking it (frozen, or its connection hanging
-- open): it is passed over, and joins again at the back if it ever tries
-- again. This, not a steady heartbeat, is how a head that cannot take its
-- turn is told from a live one.
local due
while not take and free and head and head ~= token do
  local cur = redis.call('GET', turn)
  local who, at
  if cur then who, at = string.match(cur, '^(%S+) (%d+)$') end
  if who ~= head then
    due = now + tonumber(a_turn_ms)
    -- pcall: a server out of memory refuses this first write, and then a
    -- waiter is told "busy" all the same, its turn not recorded.
    redis.pcall('SET', turn, head .. ' ' .. string.format('%d', due), 'PX',
      2 * tonumber(a_turn_ms))
    break
  end
  due = tonumber(at)
  if now < due then break end
  redis.call('LPOP', k_queue)
  queue_left(k_queue, k_waiters, head)
  head, _, grace = live_head(k_queue, k_waiters, a_wake_prefix, now)
  if head and head ~= token then publish(a_wake_prefix .. head, 'turn') end
end
if n == 1 and not free and cur ~= 'shared' and
    redis.call('EXISTS', k_meta) == 0 then
  foreign = 1
end

if take == nil then take = free and (not head or head == token) end
if take then
  -- A proposal more than 1 s ahead of our clock counts as 1 s ahead: a
  -- client clock far ahead cannot carry fences past the day the counter
  -- lapses (7 days), after which our clock alone keeps them increasing.
  local proposed = math.min(tonumber(a_fence_proposed or '') or 0,
    now + 1000)
  local fence = math.max(tonumber(redis.call('GET', k_fence) or '0') + 1,
    now, proposed)
  local fs = string.format('%d', fence)
  -- The grant's first write needs memory: out of memory, Redis refuses
  -- it (unless a pop above wrote first), and nothing of the grant is
  -- half done.
  redis.call('SET', k_fence, fs, 'PX', a_fence_ttl_ms)
  -- Our entry goes even if we were not the head: a waiter that lost its
  -- place (lib/queue.lua) may have refreshed it since.
  if head == token then
    redis.call('LPOP', k_queue)
  elseif shared and head then
    -- A share taken from behind the head, with the shares before it.
    redis.call('LREM', k_queue, 1, token)
  end
  -- Any turn recorded is over now: a head passed over that joins again
  -- must get a turn of its own, not the old one's end. The holder's
  -- meta goes too, written anew below.
  if shared then
    -- Behind the head, the head's turn is still its own.
    if not head or head == token then redis.call('DEL', turn) end
    meta_drop(k_metas, token)
  elseif n == 1 then
    redis.call('DEL', turn, k_meta)
  else
    redis.call('DEL', turn)
    meta_drop(k_metas, token)
  end
  -- Only a --fair caller has an entry in the queue.
  if join or string.find(a_needs, 'f', 1, true) then
    queue_left(k_queue, k_waiters, token)
  end
  if plain_waiter and not shared then redis.call('ZREM', k_writers, token) end
  if shared then
    redis.call('ZADD', k_shares, now + lease, token)
    if cur ~= 'shared' then
      redis.call('SET', k_lock, 'shared', 'PX', a_lease_ms)
    end
  elseif n == 1 then
    redis.call('SET', k_lock, token, 'PX', a_lease_ms)
  else
    redis.call('ZADD', k_sem, now + lease, token)
    redis.call('SET', k_limit, n)
  end
  meta_set(mkey, mtok, 'host', a_host, 'pid', a_pid, 'user', a_user, 'cmd',
    a_cmd, 'since', nows, 'lease', a_lease_ms, 'fence', fs)
  if shared then
    shares_settle(k_lock, k_shares, k_metas, now)
    -- Readers let readers in: the next plain waiter tries too (if it is a
    -- reader, it gets in and wakes the one after it; a writer stops that).
    wake_plain(k_tokens, 1, 1, a_wake_ttl_ms)
  elseif n == 1 then
    redis.call('PEXPIRE', k_meta, a_lease_ms)
  else
    sem_expiry(k_sem, k_limit, k_metas, now)
  end
  -- A semaphore with slots still free: the next in line need not wait
  -- for a release.
  if n > 1 and redis.call('ZCARD', k_sem) < n then
    local nh = redis.call('LINDEX', k_queue, '0')
    if nh then publish(a_wake_prefix .. nh, 'turn') end
  end
  return {1, fence}
end

local pos = -1
if join then
  pos = redis.call('LPOS', k_queue, token)
  if not pos then
    pos = redis.call('RPUSH', k_queue, token) - 1
    -- Passed over and back: the turn we had is not ours to keep.
    local cur = redis.call('GET', turn)
    if cur and string.sub(cur, 1, #token + 1) == token .. ' ' then
      redis.call('DEL', turn)
    end
  end
  -- A queue begun now is on this server; one we come back to may not be.
  if pos == 0 and not head then
    queue_server(k_waiters, now, 'new')
  elseif a_join == '2' then
    queue_server(k_waiters, now, 'back')
  end
  redis.call('HSET', k_waiters, token, string.format('%d',
    now + tonumber(a_waiter_ttl_ms)) .. (shared and 's' or '') .. '\31' ..
    a_user .. '\31' .. a_host .. '\31' .. a_pid .. '\31' .. a_cmd)
  local qttl = math.max(2 * lease, wait + 2 * tonumber(a_waiter_ttl_ms))
  if redis.call('PTTL', k_queue) < qttl then
    redis.call('PEXPIRE', k_queue, qttl)
  end
  if redis.call('PTTL', k_waiters) < qttl then
    redis.call('PEXPIRE', k_waiters, qttl)
  end
end
-- Waiting out a head's turn: look again when it is over; the one next in
-- line sooner, as the head may die first (live_head sees that at once:
-- its subscription goes with its process).
if due then
  -- A head nobody hears yet is passed over when its grace ends.
  if grace and grace < due then due = grace end
  wait = math.max(due - now, 1)
  local look = tonumber(a_look_ms)
  if pos == 1 and wait > look then wait = look end
end

-- An exclusive request that will wait while KEY is shared (or while
-- other writers wait): readers wait for it from now on. Its claim lapses
-- unless it tries again, so it tries at least every third of it.
if not shared and n == 1 and plain_waiter and not join and
    (cur == 'shared' or redis.call('EXISTS', k_writers) == 1) then
  local ttl = tonumber(a_writer_ttl_ms)
  redis.call('ZADD', k_writers, now + ttl, token)
  redis.call('PEXPIRE', k_writers, a_writer_ttl_ms)
  writer = 1
  if wait < 0 or wait > ttl / 3 then wait = math.floor(ttl / 3) end
end

local m = {}
-- A skip's answer names a holder only when it is the one exclusive
-- holder (run.c words the others itself).
if (a_want_holder == '1' or skip) and n == 1 and cur ~= 'shared' then
  m = redis.call('HMGET', k_meta, 'user', 'host', 'pid', 'cmd', 'since',
    'ended')
elseif a_want_holder == '1' and not skip and cur == 'shared' then
  -- The share that ends last, as the lease left is its.
  local last = redis.call('ZRANGE', k_shares, -1, -1)
  if last[1] then
    m = redis.call('HMGET', k_metas, unpack(meta_names(last[1], 'user',
      'host', 'pid', 'cmd', 'since', 'ended')))
  end
end
if skip then
  record_skip(k_last, redis.call('HMGET', k_last, 'skip_fence', 'skips'),
    redis.call('GET', k_fence) or '', a_user, a_host, a_pid, nows,
    a_skip_ttl_ms)
end
return reply_busy({got = 0, wait = wait, position = pos, user = m[1] or '',
  host = m[2] or '', pid = m[3] or '', cmd = m[4] or '', since = m[5] or '',
  now = nows, lease_left = left, foreign = foreign, ended = m[6] or '',
  writer = writer})
