-- queue.lua: embedded in front of every script that calls it, so the
-- scripts that hand KEY on do it one way. The --fair queue is two keys of
-- KEY: the list P{K}:q of the waiters' tokens, oldest first, and the hash
-- P{K}:w of each queued waiter's "DUE\31user\31host\31pid\31cmd", DUE the
-- server ms its entry lapses at unless refreshed (acquire.lua,
-- heartbeat.lua), followed by 's' for a shared request (-s). A waiter is alive while its entry is due after now and
-- it listens on its channel wakepre..TOKEN: it subscribes before it joins
-- (wait.c), and the kernel closes a dead process's sockets at once,
-- whereas its entry lapses only seconds later. One more field of the
-- hash, 'server' (no token is that word), says on which server the
-- queue's waiters subscribed: see queue_server.

-- Sharded pub/sub where the server has it (Redis 7: in a Cluster the
-- message goes to the slot's node, not over the bus to every node);
-- plain PUBLISH on Redis 6. Waiters SSUBSCRIBE or SUBSCRIBE to match.
-- Returns how many clients heard it.
local function publish(ch, msg)
  local ok, n = pcall(redis.call, 'SPUBLISH', ch, msg)
  if not ok then n = redis.call('PUBLISH', ch, msg) end
  return n
end

-- Has channel ch a subscriber (SUBSCRIBE, or SSUBSCRIBE as in Cluster)?
-- A server that will not say (an ACL without PUBSUB) is taken for yes;
-- one without SHARDNUMSUB (before 7.0) has no shard channels. Asked
-- shard first: where waiters SSUBSCRIBE (Redis 7), one question answers.
local function subscribed(ch)
  local r = redis.pcall('PUBSUB', 'SHARDNUMSUB', ch)
  if type(r) == 'table' and not r.err and r[2] > 0 then return true end
  r = redis.pcall('PUBSUB', 'NUMSUB', ch)
  return type(r) ~= 'table' or r.err ~= nil or r[2] > 0
end

-- The DUE of waiter entry v (HGET of P{K}:w), or nil (no entry).
local function entry_due(v)
  return v and tonumber(string.match(v, '^%d+') or '')
end

-- Is waiter entry v a shared request's?
local function entry_shared(v)
  return v ~= nil and v ~= false and string.match(v, '^%d+s') ~= nil
end

-- Subscriptions live in a server process, the queue in its data: after
-- a restart with AOF or RDB, a failover to a replica that has the queue,
-- or a move of its slot, nobody is subscribed though every waiter may
-- be alive. A live one is back within a second (a waiter retries at most
-- RETRY_BACKOFF_MAX_MS apart, util.h), subscribes and tries again,
-- saying so (acquire.lua's join '2'). So the field 'server' of w holds
-- "RUN_ID UNTIL": the run_id (INFO server) of the server the waiters
-- subscribed on and, once a script saw it change, until when (server ms)
-- they have to subscribe there again: REJOIN_MS from then. Until then a
-- queued waiter nobody hears is not taken for dead; after it, or with
-- the server unchanged, it is (a killed waiter is passed over at once).
-- A server that will not tell its run_id (an ACL without +info) gives no
-- grace: a waiter not yet back is passed over then, as a dead one.
local REJOIN_MS = 3000
-- This server's run_id, asked once per script (nil: not yet; false: the
-- server did not say).
local queue_run_id = nil

-- Note on which server the queue of w is: 'new' (a queue just begun
-- here, where no place can have been lost), 'back' (a waiter subscribed
-- again: the server may have changed), or 'look' (status: write
-- nothing). Returns the end of the grace (server ms) while one runs, or
-- nil. The field goes with the queue (queue_left) and expires with w.
local function queue_server(w, now, how)
  if queue_run_id == nil then
    local info = redis.pcall('INFO', 'server')
    queue_run_id = type(info) == 'string' and
      string.match(info, 'run_id:(%x+)') or false
  end
  if not queue_run_id then return nil end
  local v = redis.call('HGET', w, 'server')
  local id, till = nil, 0
  if v then
    id, till = string.match(v, '^(%x+) (%d+)$')
    till = tonumber(till) or 0
  end
  if how == 'new' or not id then
    -- Nobody queued here yet, or a queue begun before the field was
    -- kept: nothing to tell a change by.
    till = 0
  elseif id == queue_run_id then
    return till > now and till or nil
  else
    -- The server changed since (for status: it has yet to be noted).
    till = now + REJOIN_MS
  end
  if how ~= 'look' then
    -- pcall: a user that may not HSET (release --force), or a full
    -- server, leaves it unnoted; waiters not heard are passed over then.
    redis.pcall('HSET', w, 'server', queue_run_id .. ' ' ..
      string.format('%d', till))
  end
  return till > now and till or nil
end

-- Token tok has left the queue q: its entry goes, and the field
-- 'server' with the last one.
local function queue_left(q, w, tok)
  if redis.call('LINDEX', q, '0') then
    redis.call('HDEL', w, tok)
  else
    redis.call('HDEL', w, tok, 'server')
  end
end

-- Drop the dead waiters at the head of the --fair queue q (entries in the
-- hash w, channels wakepre..TOKEN); return the live head or nil. A
-- waiter nobody hears is dead, unless the server changed under the
-- queue a moment ago (queue_server); a live one whose subscription
-- dropped while the server stayed loses its place here, and joins again
-- at the back once subscribed anew. now: the server's ms if the caller
-- has it; first: the head the caller just read, if it did. Also returns
-- the live head's entry and, when nobody hears that head yet, the end of
-- its grace.
local function live_head(q, w, wakepre, now, first)
  local head = first or redis.call('LINDEX', q, '0')
  local v, grace
  while head do
    now = now or server_ms()
    v = redis.call('HGET', w, head)
    local due = entry_due(v)
    if due and due > now then
      if subscribed(wakepre .. head) then break end
      if grace == nil then grace = queue_server(w, now, 'back') or false end
      if grace then break end
    end
    redis.call('LPOP', q)
    queue_left(q, w, head)
    head = redis.call('LINDEX', q, '0')
  end
  if not head then return nil end
  return head, v, grace or nil
end

-- Tell the --fair queue that KEY may be free: the live head ('turn': try
-- now), and the one after it ('next': look within HANDOFF_LOOK_MS, not
-- now), on their own channels (wakepre..TOKEN). If the head dies or
-- freezes before it takes its turn, the next one's look notices
-- (acquire.lua) and it takes over instead of sleeping out a whole lease;
-- trying at once instead would put a second acquire in front of the head's
-- on every hand-off. While nobody hears the head yet (the server changed:
-- queue_server), 'next' goes down the queue to the first that hears it,
-- which looks again when that grace ends. 'next' goes first: Redis 7
-- writes what it owes its clients in the reverse order of their first
-- reply of the round (the list of pending writes is pushed at its head;
-- not so with io-threads), so the head, told last, is written to (and
-- woken) before the one after it. Shared requests at the head are granted
-- together: each of those after a shared head, up to the first exclusive
-- one, is told 'turn' too (at most SHARED_RUN of them: the rest follow as
-- each grant wakes the next, acquire.lua).
local SHARED_RUN = 100
local function wake_queue(q, w, wakepre, now)
  local head, v, grace = live_head(q, w, wakepre, now)
  if head then
    if grace then
      for _, tok in ipairs(redis.call('LRANGE', q, 1, SHARED_RUN)) do
        if publish(wakepre .. tok, 'next') > 0 then break end
      end
    else
      local nxt = redis.call('LINDEX', q, '1')
      if nxt then publish(wakepre .. nxt, 'next') end
    end
    publish(wakepre .. head, 'turn')
    if not entry_shared(v) then return end
    for _, tok in ipairs(redis.call('LRANGE', q, 1, SHARED_RUN)) do
      if not entry_shared(redis.call('HGET', w, tok)) then break end
      publish(wakepre .. tok, 'turn')
    end
  end
end

-- Leave n wake tokens for plain waiters blocked in BLPOP on list tokens
-- (Redis hands each to the oldest one), keeping at most cap, for ttl ms.
local function wake_plain(tokens, n, cap, ttl)
  local len = 0
  for _ = 1, n do len = redis.call('LPUSH', tokens, '1') end
  if len > cap then redis.call('LTRIM', tokens, 0, cap - 1) end
  redis.call('PEXPIRE', tokens, ttl)
end
