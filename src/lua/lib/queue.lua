-- queue.lua: embedded in front of every script (src/embed-lua.sh), so the
-- scripts that hand KEY on do it one way.

-- Sharded pub/sub where the server has it (Redis 7: in a Cluster the
-- message goes to the slot's node, not over the bus to every node);
-- plain PUBLISH on Redis 6. Waiters SSUBSCRIBE or SUBSCRIBE to match.
local function publish(ch, msg)
  if not pcall(redis.call, 'SPUBLISH', ch, msg) then
    redis.call('PUBLISH', ch, msg)
  end
end

-- Drop the dead waiters at the head of the --fair queue q (a waiter is
-- alive while its key wpre..TOKEN exists); return the live head or nil.
local function live_head(q, wpre)
  local head = redis.call('LINDEX', q, 0)
  while head and redis.call('EXISTS', wpre .. head) == 0 do
    redis.call('LPOP', q)
    head = redis.call('LINDEX', q, 0)
  end
  return head or nil
end

-- Tell the --fair queue that KEY may be free: the live head, and the one
-- after it, on their own channels (wakepre..TOKEN). If the head died
-- moments ago (its key not yet expired), the next one watches the head's
-- heartbeat and takes over instead of sleeping out a whole lease.
local function wake_queue(q, wpre, wakepre)
  local head = live_head(q, wpre)
  if head then
    publish(wakepre .. head, 'turn')
    local nxt = redis.call('LINDEX', q, 1)
    if nxt then publish(wakepre .. nxt, 'turn') end
  end
end

-- Leave n wake tokens for plain waiters blocked in BLPOP on list tokens
-- (Redis hands each to the oldest one), keeping at most cap, for ttl ms.
local function wake_plain(tokens, n, cap, ttl)
  for _ = 1, n do redis.call('LPUSH', tokens, '1') end
  redis.call('LTRIM', tokens, 0, cap - 1)
  redis.call('PEXPIRE', tokens, ttl)
end
