-- redisson_acquire: take KEY as Redisson's lock (--redisson) for our
-- field, or say how long to wait; with fair '1', as its fair lock
-- (getFairLock), in arrival order with Redisson's own fair waiters.
-- KEYS: lock fence meta queue timeouts waiters
-- ARGV: field lease_ms fence_ttl_ms host pid user cmd fair join
-- ARGV: allowance_ms look_ms wake wake_prefix needs info waiter_ttl_ms
-- lock: the hash at KEY (lib/redisson.lua); field: "TOKEN:1", rlock's
-- token as Redisson's client id and a fixed thread number; fence: rlock's
-- fence counter beside it, meta: the holder's record (fields field host
-- pid user cmd since lease fence); queue, timeouts, waiters: the fair
-- lock's (lib/redisson.lua); join '1': take a place in the queue;
-- allowance_ms: Redisson's fair lock wait timeout, what each place in
-- the queue adds to the one before it; look_ms: ms between looks at a
-- queue head that has yet to take a free KEY; wake: Redisson's unlock
-- channel; wake_prefix: wake..":", a fair waiter's channel is that and
-- its field; needs: what else the caller runs while it waits, 'w'
-- SUBSCRIBE to wake, 'f' to its own channel; info: "user\31host\31pid
-- \31cmd" of a fair waiter, kept waiter_ttl_ms in waiters.
-- RUNS: EVALSHA x 0; EVAL x 0; TIME; EXISTS lock; HEXISTS lock x
-- RUNS: HSET lock x 1; PEXPIRE lock 1; PTTL lock; GET fence
-- RUNS: SET fence 1 PX 1; DEL meta; HSET meta f v; PEXPIRE meta 1
-- RUNS: HGET meta f; HGETALL meta; HKEYS lock; @record
-- RUNS fair: LINDEX queue 0; ZSCORE timeouts x; ZREM timeouts x
-- RUNS fair: LPOP queue; HGET waiters x; HDEL waiters x
-- RUNS fair: PUBSUB? SHARDNUMSUB =wake_prefix+x
-- RUNS fair: PUBSUB? NUMSUB =wake_prefix+x; ZRANGE timeouts 0 0
-- RUNS fair: ZINCRBY timeouts 1 x; ZADD timeouts 1 x; RPUSH queue x
-- RUNS fair: LPOS queue x; HSET waiters x x; PTTL queue; PEXPIRE queue 1
-- RUNS fair: PTTL timeouts; PEXPIRE timeouts 1; PTTL waiters
-- RUNS fair: PEXPIRE waiters 1; SUBSCRIBE =wake_prefix+x
-- RUNS fair: SSUBSCRIBE? =wake_prefix+x; @redisson_dequeue
-- RUNS blpop: SUBSCRIBE =wake; SSUBSCRIBE? =wake
-- RUNS: @redisson_extend; @redisson_release; @redisson_is_ours
-- Returns {1, fence} when the caller holds KEY; else the busy reply of
-- acquire.lua, by the same names:
-- REPLY busy: got wait position user host pid cmd since now lease_left
-- REPLY busy: foreign ended writer
-- (foreign, ended, writer: 0, '' and 0: a Redisson holder's release
-- publishes, so its waiters are woken as rlock's are).
-- Invariants: never writes a field but ours, nor shortens another's
-- expiry; a field of ours already there is a retry and is not counted
-- again (rlock re-enters by is_ours, never by the count), so one release
-- frees KEY; fence = max(last + 1, server ms), strictly increasing across
-- Redisson's holders too; a fair grant goes to the head only, and takes
-- every other place's allowance off it, as Redisson's own does.
local now = server_ms()
local fair, field = a_fair == '1', a_field
local allowance = tonumber(a_allowance_ms)

local pttl = redis.call('PTTL', k_lock)
local head, t
if fair then
  -- A live waiter keeps its place: its own timeout, refreshed first,
  -- never lapses while it tries again in time (a grant elsewhere takes
  -- an allowance off every place).
  t = redis.call('ZSCORE', k_timeouts, field)
  if t and now + math.max(pttl, 0) + allowance > tonumber(t) then
    redis.call('ZADD', k_timeouts, now + math.max(pttl, 0) + allowance,
      field)
  end
  head = redisson_prune(k_queue, k_timeouts, k_waiters, a_wake_prefix, now)
end
if redis.call('HEXISTS', k_lock, field) == 1 then
  -- Ours already: an attempt whose answer was lost, sent again.
  redis.call('PEXPIRE', k_lock, a_lease_ms)
  redis.call('PEXPIRE', k_meta, a_lease_ms)
  return {1, tonumber(redis.call('HGET', k_meta, 'fence') or '0')}
end
if redis.call('EXISTS', k_lock) == 0 and (not head or head == field) then
  if fair then
    if head then redis.call('LPOP', k_queue) end
    redis.call('ZREM', k_timeouts, field)
    redis.call('HDEL', k_waiters, field)
    for _, f in ipairs(redis.call('ZRANGE', k_timeouts, 0, -1)) do
      redis.call('ZINCRBY', k_timeouts, -allowance, f)
    end
  end
  local fence = math.max(tonumber(redis.call('GET', k_fence) or '0') + 1,
    now)
  local fs = string.format('%d', fence)
  redis.call('SET', k_fence, fs, 'PX', a_fence_ttl_ms)
  redis.call('HSET', k_lock, field, 1)
  redis.call('PEXPIRE', k_lock, a_lease_ms)
  redis.call('DEL', k_meta)
  redis.call('HSET', k_meta, 'field', field, 'host', a_host, 'pid', a_pid,
    'user', a_user, 'cmd', a_cmd, 'since', string.format('%d', now),
    'lease', a_lease_ms, 'fence', fs)
  redis.call('PEXPIRE', k_meta, a_lease_ms)
  return {1, fence}
end

local wait, position = pttl, -1
if fair then
  -- Pruned since (its channel gone quiet): a place anew, as Redisson's
  -- own waiter whose place lapsed.
  t = t and redis.call('ZSCORE', k_timeouts, field)
  if not t and a_join == '1' then
    -- Redisson's rule: a place is void the allowance after the one
    -- before it is (or after the holder's lease, for the first).
    local last = redis.call('LINDEX', k_queue, -1)
    local lt = last and redis.call('ZSCORE', k_timeouts, last)
    local ttl = lt and tonumber(lt) - now or pttl
    if redis.call('ZADD', k_timeouts, now + ttl + allowance, field) == 1 then
      redis.call('RPUSH', k_queue, field)
    end
    t = true
  end
  if t then
    redis.call('HSET', k_waiters, field, string.format('%d',
      now + tonumber(a_waiter_ttl_ms)) .. '\31' .. a_info)
    redisson_keep(k_queue, k_timeouts, k_waiters, now, allowance)
    position = redis.call('LPOS', k_queue, field) or -1
  end
  -- KEY free but not ours: the head has yet to take it (or a plain
  -- client's attempt comes first); look again soon. Held: the release
  -- tells the head; the others come back every third of a lease to keep
  -- their places.
  if pttl == -2 then
    wait = tonumber(a_look_ms)
  elseif t then
    wait = math.min(pttl, math.floor(tonumber(a_lease_ms) / 3))
  end
end
if wait == -2 then wait = 0 end
local user, host, pid, cmd, since = '', '', '', '', ''
local m = redis.call('HGETALL', k_meta)
local mf = {}
for i = 1, #m, 2 do mf[m[i]] = m[i + 1] end
if mf.field and redis.call('HEXISTS', k_lock, mf.field) == 1 then
  user, host, pid = mf.user or '', mf.host or '', mf.pid or ''
  cmd, since = mf.cmd or '', mf.since or ''
else
  -- A Redisson client: its ID:THREAD, as status shows it.
  local f = redis.call('HKEYS', k_lock)
  if f[1] then cmd = f[1] end
end
return reply_busy({got = 0, wait = wait, position = position, user = user,
  host = host, pid = pid, cmd = cmd, since = since,
  now = string.format('%d', now), lease_left = pttl, foreign = 0,
  ended = '', writer = 0})
