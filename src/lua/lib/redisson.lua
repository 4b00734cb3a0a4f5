-- redisson.lua: embedded in front of every script that calls it: what
-- the --redisson scripts share about Redisson's lock (shared/REDISSON.md,
-- rlock(7)). The lock is the hash at KEY, one field ID:THREAD per holder
-- counting its re-entries; its fair lock adds the list of waiters' fields
-- (queue, arrival order) and the sorted set of the client-clock ms after
-- which each one's place is void (timeouts). rlock's own fair waiters
-- also have an entry in the hash waiters, "DUE\31user\31host\31pid\31cmd"
-- (lib/queue.lua's shape), by which status describes them and a waiter
-- that died is passed over once nobody listens on its channel.

-- Redisson's unlock message, as its clients publish it: PUBLISH, and
-- SPUBLISH too where the server has it (a Redisson client on a Cluster
-- of Redis 7 subscribes sharded).
local function redisson_publish(ch)
  redis.call('PUBLISH', ch, '0')
  pcall(redis.call, 'SPUBLISH', ch, '0')
end

-- Drop from the head of the fair queue q the waiters whose place is
-- void: Redisson's rule (a timeout in tmo that has passed at now), and
-- rlock's own waiters (an entry in w) whose entry lapsed or whose channel
-- wakepre..FIELD nobody listens to. Returns the head left, or nil.
local function redisson_prune(q, tmo, w, wakepre, now)
  while true do
    local head = redis.call('LINDEX', q, 0)
    if not head then return nil end
    local t = redis.call('ZSCORE', tmo, head)
    local gone = t and tonumber(t) <= now
    if not gone then
      local v = redis.call('HGET', w, head)
      local due = v and tonumber(string.match(v, '^%d+') or '')
      gone = v and (not due or due <= now or
        not subscribed(wakepre .. head))
    end
    if not gone then return head end
    redis.call('ZREM', tmo, head)
    redis.call('LPOP', q)
    redis.call('HDEL', w, head)
  end
end

-- Keep the fair queue's keys until the last place in it is void, plus
-- allowance: nothing rlock wrote there stays without an expiry.
local function redisson_keep(q, tmo, w, now, allowance)
  local last = redis.call('ZRANGE', tmo, -1, -1, 'WITHSCORES')
  local keep = allowance
  if last[2] then keep = math.max(tonumber(last[2]) - now, 0) + allowance end
  for _, k in ipairs({q, tmo, w}) do
    local t = redis.call('PTTL', k)
    if t == -1 or (t >= 0 and t < keep) then
      redis.call('PEXPIRE', k, keep)
    end
  end
end
