-- release: compare-and-delete, then wake whoever may take KEY now.
-- KEYS[1] lock  KEYS[2] holder meta  KEYS[3] sem  KEYS[4] limit
-- KEYS[5] queue  KEYS[6] wake tokens  KEYS[7] last run (only when a run
-- ended)   ARGV[1] token  ARGV[2] N  ARGV[3] "P{K}:wake"  ARGV[4] "P{K}:w:"
-- ARGV[5] "P{K}:wake:"  ARGV[6] wake token ttl ms; with KEYS[7]:
-- ARGV[7] --min-hold ms (0: none)  ARGV[8] rlock's exit status
-- ARGV[9] '1' if the lease was lost  ARGV[10] last run ttl ms
-- ARGV[11] ms since the grant, by the holder's clock (if meta is gone)
-- Returns 1 when released (or kept by --min-hold), 0 when KEY was not
-- ours (nothing done, nothing recorded); {1, why} when released but a
-- step after it (a wake-up, the record) was refused (why: the step and
-- Redis's error). An error reply (the check or the release proper
-- refused) leaves the lock as it was.
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
-- No ACL questions (acl.lua): acquire.lua asked for all of this before
-- it granted KEY, and asking again cost a ninth of an uncontended lock
-- cycle's instructions. A permission taken away since then (an ACL
-- changed mid-run) refuses the check or the release proper, one command
-- that changes nothing when refused; or one of the steps after it, each
-- run in a pcall so that the others still run and the lock is released
-- all the same, where asking first refused it all and kept the lock to
-- its lease's end.
local token, mutex = ARGV[1], ARGV[2] == '1'
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

-- What follows the release proper runs step by step (see above), each
-- named in the first refusal returned.
local why
local function step(name, fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok and not why then
    why = name .. ': ' .. (type(err) == 'table' and err.err or tostring(err))
  end
end
-- A step that creates key k and then sets its expiry is skipped when
-- that PEXPIRE would be refused: k would stay without one (Redis 6
-- cannot be asked; a question that fails is no answer, and an error
-- here would come after the release proper).
local function expirable(name, k)
  local can = redis.acl_check_cmd
  local asked, yes = true, true
  if can then asked, yes = pcall(can, 'PEXPIRE', k, '1') end
  if not asked or yes then return true end
  why = why or (name .. ': the ACL user lacks +pexpire on ' .. k)
  return false
end
-- The meta may be gone (evicted, deleted) while KEY is ours: the HSET
-- then makes it anew, and it needs its expiry again.
local function meta_ended(left)
  redis.call('HSET', KEYS[2], 'ended', now, 'exit', ARGV[8],
    'hold_until', string.format('%d', hold))
  redis.call('PEXPIRE', KEYS[2], left)
end
local function slot_expiry()
  local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  local ttl = tonumber(top[2]) - tonumber(now)
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('PEXPIRE', KEYS[4], ttl)
end
local function slot_rest()
  redis.call('DEL', KEYS[2])
  if redis.call('ZCARD', KEYS[3]) == 0 then
    redis.call('DEL', KEYS[3], KEYS[4])
  end
end

-- The release proper is one command, KEY's PEXPIRE (--min-hold), its
-- DEL, the slot's ZADD or ZREM: refused, it leaves the lock as it was,
-- and the error reply says so. The meta's PEXPIRE to the hold's end
-- before it (which makes it a script's second write, see above) is then
-- all that changed.
if hold then
  local left = hold - tonumber(now)
  redis.call('PEXPIRE', KEYS[2], left)
  if mutex then
    redis.call('PEXPIRE', KEYS[1], left)
  else
    redis.call('ZADD', KEYS[3], hold, token)
    step('keeping the slot', slot_expiry)
  end
  step('marking the run ended', meta_ended, left)
elseif mutex then
  redis.call('DEL', KEYS[1], KEYS[2])
else
  redis.call('ZREM', KEYS[3], token)
  step('freeing the slot', slot_rest)
end
if KEYS[7] and expirable('recording the run', KEYS[7]) then
  step('recording the run', record_run, KEYS[7], m, now, ARGV[8], ARGV[9],
    ARGV[10])
end
step('telling P{K}:wake', publish, ARGV[3], 'released')
if expirable('waking a waiter', KEYS[6]) then
  step('waking a waiter', wake_plain, KEYS[6], 1, tonumber(ARGV[2]),
    ARGV[6])
end
step('waking the queue', wake_queue, KEYS[5], ARGV[4], ARGV[5])
if why then return {1, why} end
return 1
