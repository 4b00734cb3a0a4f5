-- release: compare-and-delete, then wake whoever may take KEY now.
-- KEYS[1] lock  KEYS[2] holder meta  KEYS[3] sem  KEYS[4] limit
-- KEYS[5] queue  KEYS[6] wake tokens  KEYS[7] last run (only when a run
-- ended)   ARGV[1] token  ARGV[2] N  ARGV[3] "P{K}:wake"  ARGV[4] "P{K}:w:"
-- ARGV[5] "P{K}:wake:"  ARGV[6] wake token ttl ms; with KEYS[7]:
-- ARGV[7] --min-hold ms (0: none)  ARGV[8] rlock's exit status
-- ARGV[9] '1' if the lease was lost  ARGV[10] last run ttl ms
-- ARGV[11] ms since the grant, by the holder's clock (if meta is gone)
-- Returns 1 when released (or kept by --min-hold), 0 when KEY was not
-- ours (nothing done, nothing recorded); refused with RLOCK_NOPERM
-- (acl.lua), nothing done, when the ACL lacks a permission it needs.
-- Invariants: never deletes or extends a lock held by another token. A
-- run is recorded (P{K}:last) in the same call, so recording costs no
-- round trip. --min-hold: when less than that has passed since the grant
-- (meta's since, server clock), KEY and its meta are not deleted but set
-- to expire at since + min-hold, and the meta says how the run ended:
-- nobody can take KEY before then, no process has to stay behind for it,
-- and waiters are woken at once all the same: their next attempt learns
-- the new expiry, which may be sooner than the one they sleep towards.
-- Wakes one plain waiter (the oldest BLPOP on KEYS[6]; at most N tokens
-- wait there) and only the live head of the --fair queue (and the one
-- after it), so a hand-off costs O(1) messages however many wait. The
-- message on P{K}:wake is for anyone else who wants to know.
local token, mutex = ARGV[1], ARGV[2] == '1'
-- Checked before the DEL: a wake-up or a record refused after it would
-- leave the waiters to the lease's end, or the run unrecorded.
acl_ask(function()
  acl_release(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[3],
    ARGV[4], ARGV[5], tonumber(ARGV[2]))
  if KEYS[7] then
    acl('HSET', KEYS[7], 'x', 'x')
    acl('PEXPIRE', KEYS[7], '1')
    acl('HSET', KEYS[2], 'x', 'x')
    acl('PEXPIRE', KEYS[2], '1')
    if mutex then
      acl('PEXPIRE', KEYS[1], '1')
    else
      acl('ZADD', KEYS[3], '1', 'x')
      acl('PEXPIRE', KEYS[3], '1')
    end
  end
end)
if acl_refused then return acl_refused end
if mutex then
  if redis.call('GET', KEYS[1]) ~= token then return 0 end
elseif not redis.call('ZSCORE', KEYS[3], token) then
  return 0
end

-- Release (or keep) first, record after: a full server refuses a
-- script's first write that needs memory (HSET does), not the ones after
-- it, and a release must not fail for want of room to record it.
local now, m, hold
if KEYS[7] then
  now = now_ms()
  m = redis.call('HMGET', KEYS[2], 'user', 'host', 'pid', 'cmd', 'since',
    'fence')
  if not m[5] then
    m[5] = string.format('%d', tonumber(now) - tonumber(ARGV[11]))
  end
  hold = tonumber(m[5]) + tonumber(ARGV[7])
  if tonumber(ARGV[7]) <= 0 or hold <= tonumber(now) then hold = nil end
end

if hold then
  local left = hold - tonumber(now)
  redis.call('PEXPIRE', KEYS[2], left)
  if mutex then
    redis.call('PEXPIRE', KEYS[1], left)
  else
    redis.call('ZADD', KEYS[3], hold, token)
    local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
    local ttl = tonumber(top[2]) - tonumber(now)
    redis.call('PEXPIRE', KEYS[3], ttl)
    redis.call('PEXPIRE', KEYS[4], ttl)
  end
  redis.call('HSET', KEYS[2], 'ended', now, 'exit', ARGV[8],
    'hold_until', string.format('%d', hold))
elseif mutex then
  redis.call('DEL', KEYS[1], KEYS[2])
else
  redis.call('ZREM', KEYS[3], token)
  redis.call('DEL', KEYS[2])
  if redis.call('ZCARD', KEYS[3]) == 0 then
    redis.call('DEL', KEYS[3], KEYS[4])
  end
end
if KEYS[7] then
  record_run(KEYS[7], m, now, ARGV[8], ARGV[9], ARGV[10])
end
publish(ARGV[3], 'released')
wake_plain(KEYS[6], 1, tonumber(ARGV[2]), ARGV[6])
wake_queue(KEYS[5], ARGV[4], ARGV[5])
return 1
