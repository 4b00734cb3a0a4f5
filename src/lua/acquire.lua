-- acquire: take KEY (mutex, or one of N semaphore slots) for a token, or
-- say how long to wait and where we stand in the --fair queue.
-- KEYS[1] lock  KEYS[2] holder meta (P{K}:meta, or P{K}:meta:TOKEN for -N)
-- KEYS[3] fence  KEYS[4] sem  KEYS[5] limit  KEYS[6] queue  KEYS[7] our :w
-- ARGV[1] token  ARGV[2] lease ms  ARGV[3] host  ARGV[4] pid  ARGV[5] user
-- ARGV[6] cmd  ARGV[7] fence ttl ms  ARGV[8] N  ARGV[9] 1: join the queue
-- ARGV[10] "P{K}:w:"  ARGV[11] "P{K}:wake:"  ARGV[12] waiter ttl ms
-- ARGV[13] 1: return the holder's meta when busy  ARGV[14] ms between looks
-- at a queue head that has yet to take a free KEY  ARGV[15] what else the
-- caller runs while it waits: 'w' BLPOP (a plain or --redlock waiter),
-- 'f' SSUBSCRIBE and dequeue (a --fair one)  ARGV[16] ms a live queue
-- head has to take a free KEY (its turn) before it is passed over
-- ARGV[17] a fence the caller proposes, or absent (--redlock: its clock
-- a little ahead, so that every master draws the same one: quorum.c)
-- Refused with RLOCK_NOPERM (acl.lua), writing nothing, when the caller's
-- ACL lacks a permission this script, the holder's extend and release, or
-- the waiter's commands (ARGV[15]) need.
-- Returns {1, fence} when the caller holds KEY; else {0, wait ms, queue
-- position (0 = next, -1 not queued), holder user, host, pid, cmd,
-- since, server now, lease left ms, foreign} where wait is when trying
-- again makes sense (-1: a holder key without expiry), lease left is the
-- holder's (for -N the soonest to end; -1 no expiry, -2 nobody holds KEY:
-- a --fair waiter ahead of us is taking its turn), and foreign is 1 when
-- the holder is not rlock (KEY without :meta: its release wakes nobody).
-- Invariants: at most N holders; a token already holding is a harmless
-- retry or a nested run and never shortens its lease; nobody overtakes a
-- live queue head (one that takes its turn in time); fence = max(last +
-- 1, server ms, the fence proposed but at most 1 s past server ms).
local token, lease, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[8])
-- On the paths every run takes, numbers go to redis.call as the strings
-- they came as, or formatted once: Redis prints a number argument with
-- "%.17g", a few thousand instructions each time.

-- Everything this KEY's holder and waiter will run, asked before any
-- write. What the holder's extend and release ask (acl_extend,
-- acl_release: the lock's GET and PEXPIRE, the meta's PEXPIRE, the
-- queue's head and pop) is not asked here again.
local needs = ARGV[15] or ''
-- A run not obtained counts itself in P{K}:last (record.lua's skip),
-- named here from the waiters' prefix: only asked about, never touched.
local last = string.sub(ARGV[10], 1, -3) .. 'last'
-- P{K}:turn: "TOKEN DUE", the queue head whose turn runs out at DUE.
local turn = string.sub(ARGV[10], 1, -3) .. 'turn'
acl_ask(function()
  acl('EVALSHA', 'x', '0')
  acl('EVAL', 'x', '0')
  acl('TIME')
  acl('PTTL', ARGV[10] .. 'x')
  acl('GET', KEYS[3])
  acl('SET', KEYS[3], '1', 'PX', '1')
  acl('HSET', KEYS[2], 'f', 'v')
  acl('HGET', KEYS[2], 'fence')
  acl('GET', KEYS[5])
  if n == 1 then
    acl('ZCOUNT', KEYS[4], '0', '0')
    acl('PTTL', KEYS[1])
    acl('SET', KEYS[1], token, 'PX', '1')
    if ARGV[13] == '1' then acl('HMGET', KEYS[2], 'user') end
  else
    acl('EXISTS', KEYS[1])
    acl('ZREMRANGEBYSCORE', KEYS[4], '0', '0')
    acl('ZCARD', KEYS[4])
    acl('ZSCORE', KEYS[4], token)
    acl('ZADD', KEYS[4], '1', token)
    acl('ZRANGE', KEYS[4], '0', '0')
    acl('SET', KEYS[5], '1')
    acl('PEXPIRE', KEYS[4], '1')
    acl('PEXPIRE', KEYS[5], '1')
    acl('SPUBLISH', ARGV[11] .. 'x', 'turn')
  end
  if ARGV[9] == '1' or string.find(needs, 'f', 1, true) then
    acl('LPOS', KEYS[6], token)
    acl('RPUSH', KEYS[6], token)
    acl('SET', KEYS[7], 'x', 'PX', '1')
    acl('PTTL', KEYS[6])
    acl('PEXPIRE', KEYS[6], '1')
    acl('SSUBSCRIBE', ARGV[11] .. token)
    -- Without PUBSUB a dead waiter passes for alive until its :w key
    -- lapses (queue.lua): those behind it would wait that long.
    acl('PUBSUB', 'NUMSUB', ARGV[11] .. 'x')
    acl('PUBSUB', 'SHARDNUMSUB', ARGV[11] .. 'x')
    acl_dequeue(KEYS[6], KEYS[7], ARGV[10], ARGV[11])
  end
  acl('GET', turn)
  acl('SET', turn, 'x', 'PX', '1')
  -- The grant deletes three keys in one DEL, asked as such: allowed, it
  -- allows each alone (a waiter that joins again deletes turn alone).
  acl('DEL', turn, KEYS[7], KEYS[2])
  acl('HGET', last, 'skip_fence')
  acl('HMGET', last, 'fence')
  acl('HINCRBY', last, 'skips', '1')
  acl('HSET', last, 'x', 'x')
  acl('PEXPIRE', last, '1')
  if string.find(needs, 'w', 1, true) then
    acl('BLPOP', KEYS[1] .. ':tok', '0')
  end
  acl_extend(KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], n)
  acl_release(KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], KEYS[1] .. ':tok',
    KEYS[1] .. ':wake', ARGV[10], ARGV[11], n)
end)
if acl_refused then return acl_refused end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nows = string.format('%d', now)

-- RLOCK_ errors are whole sentences for the user (conn.c drops the code).
local SAME = '; every user of a KEY must give the same --limit'
local cur
if n == 1 then
  if redis.call('ZCOUNT', KEYS[4], nows, '+inf') > 0 then
    return redis.error_reply('RLOCK_MODE the key is in use as a semaphore ' ..
      '(--limit ' .. (redis.call('GET', KEYS[5]) or '?') .. ')' .. SAME)
  end
  cur = redis.call('GET', KEYS[1])
  if cur == token then
    if redis.call('PTTL', KEYS[1]) < lease then
      redis.call('PEXPIRE', KEYS[1], ARGV[2])
      redis.call('PEXPIRE', KEYS[2], ARGV[2])
    end
    return {1, tonumber(redis.call('HGET', KEYS[2], 'fence') or '0')}
  end
else
  if redis.call('EXISTS', KEYS[1]) == 1 then
    -- An rlock mutex always has its :meta (same slot as KEYS[1]).
    if redis.call('EXISTS', KEYS[1] .. ':meta') == 0 then
      return redis.error_reply('RLOCK_FOREIGN the key is held by a ' ..
        'client other than rlock (a plain SET NX lock), which --limit ' ..
        'cannot share; only a mutex (no --limit) can wait for it')
    end
    return redis.error_reply('RLOCK_MODE the key is in use as a mutex ' ..
      '(without --limit)' .. SAME)
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  local lim = redis.call('GET', KEYS[5])
  if lim and tonumber(lim) ~= n and redis.call('ZCARD', KEYS[4]) > 0 then
    return redis.error_reply('RLOCK_MODE the key is in use as a ' ..
      'semaphore with --limit ' .. lim .. SAME)
  end
  local score = redis.call('ZSCORE', KEYS[4], token)
  if score then
    if tonumber(score) < now + lease then
      redis.call('ZADD', KEYS[4], now + lease, token)
      redis.call('PEXPIRE', KEYS[2], lease)
    end
    return {1, tonumber(redis.call('HGET', KEYS[2], 'fence') or '0')}
  end
end

-- Dead waiters leave the queue when they reach its head (we are alive,
-- whatever our :w key and subscription say: the key is refreshed below if
-- we stay queued, and we may be trying before we subscribe).
local head = redis.call('LINDEX', KEYS[6], '0')
if head and head ~= token then
  head = live_head(KEYS[6], ARGV[10], ARGV[11], head)
end

local free, wait
if n == 1 then
  -- KEY missing (GET said so above) is free: no PTTL to ask.
  wait = cur and redis.call('PTTL', KEYS[1]) or -2
  free = wait == -2
else
  local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  free = redis.call('ZCARD', KEYS[4]) < n
  wait = first[2] and tonumber(first[2]) - now or -2
end
-- What a waiter shows as the lease left: wait may become what is left of
-- the queue head's turn below, which is no holder's lease.
local left = free and -2 or wait
local foreign = 0

-- A free KEY is the live head's to take, within its turn: the first to
-- see it free starts the clock (a release wakes the head and the one
-- after it, who looks every ARGV[14] ms). A head still there when its
-- turn is over is alive but not taking it (frozen, or its connection
-- hanging open): it is passed over, and joins again at the back if it
-- ever tries again. This, not a steady heartbeat, is how a head that
-- cannot take its turn is told from a live one.
local due
while free and head and head ~= token do
  local cur = redis.call('GET', turn)
  local who, at
  if cur then who, at = string.match(cur, '^(%S+) (%d+)$') end
  if who ~= head then
    due = now + tonumber(ARGV[16])
    -- pcall: a server out of memory refuses this first write, and then a
    -- waiter is told "busy" as before, its turn not recorded.
    redis.pcall('SET', turn, head .. ' ' .. string.format('%d', due), 'PX',
      2 * tonumber(ARGV[16]))
    break
  end
  due = tonumber(at)
  if now < due then break end
  redis.call('LPOP', KEYS[6])
  redis.call('DEL', ARGV[10] .. head)
  head = live_head(KEYS[6], ARGV[10], ARGV[11])
  if head and head ~= token then publish(ARGV[11] .. head, 'turn') end
end
if n == 1 and not free and redis.call('EXISTS', KEYS[2]) == 0 then
  foreign = 1
end

if free and (not head or head == token) then
  -- A proposal more than 1 s ahead of our clock counts as 1 s ahead: a
  -- client clock far ahead cannot carry fences past the day the counter
  -- lapses (7 days), after which our clock alone keeps them increasing.
  local proposed = math.min(tonumber(ARGV[17] or '') or 0, now + 1000)
  local fence = math.max(tonumber(redis.call('GET', KEYS[3]) or '0') + 1,
    now, proposed)
  local fs = string.format('%d', fence)
  -- The grant's first write needs memory: out of memory, Redis refuses
  -- it (unless a pop above wrote first), and nothing of the grant is
  -- half done.
  redis.call('SET', KEYS[3], fs, 'PX', ARGV[7])
  -- Our :w key goes even if we were not the head: a waiter that lost its
  -- place (queue.lua) may have refreshed it since.
  if head == token then redis.call('LPOP', KEYS[6]) end
  -- Any turn recorded is over now: a head passed over that joins again
  -- must get a turn of its own, not the old one's end. The holder's
  -- meta goes too, written anew below.
  redis.call('DEL', turn, KEYS[7], KEYS[2])
  if n == 1 then
    redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
  else
    redis.call('ZADD', KEYS[4], now + lease, token)
    redis.call('SET', KEYS[5], n)
    local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
    redis.call('PEXPIRE', KEYS[4], tonumber(last[2]) - now)
    redis.call('PEXPIRE', KEYS[5], tonumber(last[2]) - now)
  end
  redis.call('HSET', KEYS[2], 'host', ARGV[3], 'pid', ARGV[4], 'user',
    ARGV[5], 'cmd', ARGV[6], 'since', nows, 'lease', ARGV[2], 'fence', fs)
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  -- A semaphore with slots still free: the next in line need not wait
  -- for a release.
  if n > 1 and redis.call('ZCARD', KEYS[4]) < n then
    local nh = redis.call('LINDEX', KEYS[6], '0')
    if nh then publish(ARGV[11] .. nh, 'turn') end
  end
  return {1, fence}
end

local pos = -1
if ARGV[9] == '1' then
  pos = redis.call('LPOS', KEYS[6], token)
  if not pos then
    pos = redis.call('RPUSH', KEYS[6], token) - 1
    -- Passed over and back: the turn we had is not ours to keep.
    local cur = redis.call('GET', turn)
    if cur and string.sub(cur, 1, #token + 1) == token .. ' ' then
      redis.call('DEL', turn)
    end
  end
  redis.call('SET', KEYS[7], ARGV[5] .. '\31' .. ARGV[3] .. '\31' ..
    ARGV[4] .. '\31' .. ARGV[6], 'PX', ARGV[12])
  local qttl = math.max(2 * lease, wait + 2 * tonumber(ARGV[12]))
  if redis.call('PTTL', KEYS[6]) < qttl then
    redis.call('PEXPIRE', KEYS[6], qttl)
  end
end
-- Waiting out a head's turn: look again when it is over; the one next in
-- line sooner, as the head may die first (live_head sees that at once:
-- its subscription goes with its process).
if due then
  wait = math.max(due - now, 1)
  local look = tonumber(ARGV[14])
  if pos == 1 and wait > look then wait = look end
end

local m = {}
if ARGV[13] == '1' and n == 1 then
  m = redis.call('HMGET', KEYS[2], 'user', 'host', 'pid', 'cmd', 'since')
end
return {0, wait, pos, m[1] or '', m[2] or '', m[3] or '', m[4] or '',
  m[5] or '', nows, left, foreign}
