-- queue.lua: embedded in front of every script that calls it, so the
-- scripts that hand KEY on do it one way. The --fair queue is two keys of
-- KEY: the list P{K}:q of the waiters' tokens, oldest first, and the hash
-- P{K}:w of each queued waiter's "DUE\31user\31host\31pid\31cmd", DUE the
-- server ms its entry lapses at unless refreshed (acquire.lua,
-- heartbeat.lua), followed by 's' for a shared request (-s). A waiter is alive while its entry is due after now and
-- it listens on its channel wakepre..TOKEN: it subscribes before it joins
-- (wait.c), and the kernel closes a dead process's sockets at once,
-- whereas its entry lapses only seconds later.

-- Sharded pub/sub where the server has it (Redis 7: in a Cluster the
-- message goes to the slot's node, not over the bus to every node);
-- plain PUBLISH on Redis 6. Waiters SSUBSCRIBE or SUBSCRIBE to match.
local function publish(ch, msg)
  if not pcall(redis.call, 'SPUBLISH', ch, msg) then
    redis.call('PUBLISH', ch, msg)
  end
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

-- Drop the dead waiters at the head of the --fair queue q (entries in the
-- hash w, channels wakepre..TOKEN); return the live head or nil. A live
-- waiter whose subscription dropped loses its place here and joins again
-- at the back once subscribed anew. now: the server's ms if the caller
-- has it; first: the head the caller just read, if it did. Also returns
-- the live head's entry.
local function live_head(q, w, wakepre, now, first)
  local head = first or redis.call('LINDEX', q, '0')
  local v
  while head do
    now = now or server_ms()
    v = redis.call('HGET', w, head)
    local due = entry_due(v)
    if due and due > now and subscribed(wakepre .. head) then break end
    redis.call('LPOP', q)
    redis.call('HDEL', w, head)
    head = redis.call('LINDEX', q, '0')
  end
  return head or nil, v
end

-- Tell the --fair queue that KEY may be free: the live head ('turn': try
-- now), and the one after it ('next': look within HANDOFF_LOOK_MS, not
-- now), on their own channels (wakepre..TOKEN). If the head dies or
-- freezes before it takes its turn, the next one's look notices
-- (acquire.lua) and it takes over instead of sleeping out a whole lease;
-- trying at once instead would put a second acquire in front of the
-- head's on every hand-off. 'next' goes first: Redis 7 writes what it
-- owes its clients in the reverse order of their first reply of the
-- round (the list of pending writes is pushed at its head; not so with
-- io-threads), so the head, told last, is written to (and woken) before
-- the one after it. Shared requests at the head are granted together:
-- each of those after a shared head, up to the first exclusive one, is
-- told 'turn' too (at most SHARED_RUN of them: the rest follow as each
-- grant wakes the next, acquire.lua).
local SHARED_RUN = 100
local function wake_queue(q, w, wakepre, now)
  local head, v = live_head(q, w, wakepre, now)
  if head then
    local nxt = redis.call('LINDEX', q, '1')
    if nxt then publish(wakepre .. nxt, 'next') end
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
