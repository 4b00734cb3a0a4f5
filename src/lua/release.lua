-- release: compare-and-delete, then wake whoever may take KEY now.
-- KEYS: lock meta metas sem limit queue waiters tokens shares writers
-- KEYS: wtokens last?
-- ARGV: token limit shared wake wake_prefix wake_ttl_ms
-- ARGV: min_hold_ms? exit? lost? last_ttl_ms? ran_ms?
-- meta: a mutex holder's, metas: the -N holders' (lib/meta.lua); queue
-- and waiters: the --fair queue (lib/queue.lua); tokens: the wake tokens;
-- last: the last run, given with the arguments after wake_ttl_ms only
-- when a run ended; limit: N; wake: the channel P{K}:wake; wake_prefix:
-- "P{K}:wake:"; shared '1': the token's share (lib/shared.lua: shares,
-- writers, wtokens);
-- min_hold_ms: --min-hold (0: none); exit: rlock's exit status; lost: '1'
-- if the lease was lost; ran_ms: ms since the grant, by the holder's clock
-- (if meta is gone).
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
-- Wakes one plain waiter (the oldest BLPOP on tokens; at most N tokens
-- wait there) and only the live head of the --fair queue (and the one
-- after it), so a hand-off costs O(1) messages however many wait. The
-- message on P{K}:wake is for anyone else who wants to know. A share's
-- release wakes nobody while other shares hold KEY; the last one's, or
-- any release while readers wait for a writer, wakes an exclusive waiter
-- (wtokens: lib/shared.lua).
-- RUNS: TIME; HMGET last f; HSET last f v; PEXPIRE last 1
-- RUNS: SPUBLISH =wake x; PUBLISH? =wake x; LPUSH tokens 1
-- RUNS: LTRIM tokens 0 0; PEXPIRE tokens 1; LINDEX queue 0; HGET waiters x
-- RUNS: LPOP queue; HDEL waiters x; SPUBLISH =wake_prefix+x x
-- RUNS: PUBLISH? =wake_prefix+x x; PUBSUB? SHARDNUMSUB =wake_prefix+x
-- RUNS: PUBSUB? NUMSUB =wake_prefix+x
-- RUNS: INFO? server; HSET? waiters x x
-- RUNS mutex: GET lock; HMGET meta user; PEXPIRE meta 1; PEXPIRE lock 1
-- RUNS mutex: HSET meta f v; DEL lock meta
-- RUNS sem: ZSCORE sem x; HMGET metas x; PTTL metas; PEXPIRE metas 1
-- RUNS sem: ZADD sem 1 x
-- RUNS sem: ZRANGE sem 0 0; PEXPIRE sem 1; PEXPIRE limit 1; HSET metas f v
-- RUNS sem: ZREM sem x; HDEL metas x; ZCARD sem; DEL sem limit metas
-- RUNS: ZCOUNT writers 0 0; LPUSH wtokens 1; LTRIM wtokens 0 0
-- RUNS: PEXPIRE wtokens 1; LRANGE queue 0 0
-- RUNS shared: ZSCORE shares x; HMGET metas x; PTTL metas; PEXPIRE metas 1
-- RUNS shared: ZADD shares 1 x; ZRANGE shares 0 0; PEXPIRE shares 1
-- RUNS shared: GET lock; PEXPIRE lock 1; DEL lock; HSET metas f v
-- RUNS shared: ZREM shares x; HDEL metas x; ZCARD shares
-- RUNS shared: DEL shares metas; ZRANGEBYSCORE shares 0 0
-- RUNS shared: ZREMRANGEBYSCORE shares 0 0
-- PRECHECK: none: acquire.lua asked for all of this before it granted
-- KEY, and asking again would cost every cycle as much. A permission taken away since then (an ACL
-- changed mid-run) refuses the check or the release proper, one command
-- that changes nothing when refused; or one of the steps after it, each
-- run in a pcall so that the others still run and the lock is released
-- all the same, where asking first refused it all and kept the lock to
-- its lease's end.
local token, shared = a_token, a_shared == '1'
local mutex = a_limit == '1' and not shared
-- A share's slots: the same code as a -N holder's, on shares.
local slots = shared and k_shares or k_sem
-- This holder's meta (lib/meta.lua).
local mkey, mtok = k_meta, nil
if not mutex then mkey, mtok = k_metas, token end
if mutex then
  if redis.call('GET', k_lock) ~= token then return 0 end
elseif not redis.call('ZSCORE', slots, token) then
  return 0
end

-- Release (or keep) first, record after: a full server refuses a
-- script's first write that needs memory (HSET does), not the ones after
-- it, and a release must not fail for want of room to record it.
local now, m, hold
if k_last then
  now = now_ms()
  m = meta_get(mkey, mtok, 'user', 'host', 'pid', 'cmd', 'since', 'fence')
  if not m[5] then
    m[5] = string.format('%d', tonumber(now) - tonumber(a_ran_ms))
  end
  hold = tonumber(m[5]) + tonumber(a_min_hold_ms)
  if tonumber(a_min_hold_ms) <= 0 or hold <= tonumber(now) then hold = nil end
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
-- The -N holders' metas share one hash: its expiry is only ever raised
-- here, to left ms at least.
local function meta_expiry(left)
  if mutex or redis.call('PTTL', k_metas) < left then
    redis.call('PEXPIRE', mkey, left)
  end
end
local function meta_ended(left)
  meta_set(mkey, mtok, 'ended', now, 'exit', a_exit, 'hold_until',
    string.format('%d', hold))
  meta_expiry(left)
end
-- Shares left after ours ended: KEY is free when none (lib/shared.lua).
local left_shares = 1
local function share_rest(t)
  meta_drop(k_metas, token)
  shares_prune(k_shares, k_metas, t)
  left_shares = shares_settle(k_lock, k_shares, k_metas, t)
end
local function slot_expiry()
  if shared then
    shares_settle(k_lock, k_shares, k_metas, tonumber(now))
    return
  end
  sem_expiry(k_sem, k_limit, k_metas, tonumber(now))
end
local function slot_rest()
  meta_drop(k_metas, token)
  if redis.call('ZCARD', k_sem) == 0 then
    redis.call('DEL', k_sem, k_limit, k_metas)
  end
end

-- The release proper is one command, KEY's PEXPIRE (--min-hold), its
-- DEL, the slot's ZADD or ZREM: refused, it leaves the lock as it was,
-- and the error reply says so. The meta's PEXPIRE to the hold's end
-- before it (which makes it a script's second write, see above) is then
-- all that changed.
if hold then
  local left = hold - tonumber(now)
  meta_expiry(left)
  if mutex then
    redis.call('PEXPIRE', k_lock, left)
  else
    redis.call('ZADD', slots, hold, token)
    step('keeping the slot', slot_expiry)
  end
  step('marking the run ended', meta_ended, left)
elseif mutex then
  redis.call('DEL', k_lock, k_meta)
elseif shared then
  redis.call('ZREM', k_shares, token)
  step('freeing the share', share_rest, now and tonumber(now) or
    server_ms())
else
  redis.call('ZREM', k_sem, token)
  step('freeing the slot', slot_rest)
end
if k_last and expirable('recording the run', k_last) then
  step('recording the run', record_run, k_last, m, now, a_exit, a_lost,
    a_last_ttl_ms)
end
step('telling P{K}:wake', publish, a_wake, 'released')
-- Other shares still hold KEY (or ours is kept by --min-hold): none of
-- those who wait can take it now.
if hold or left_shares == 0 or not shared then
  local t = now and tonumber(now) or server_ms()
  local ok, target = pcall(wake_target, k_writers, k_tokens, k_wtokens, t)
  if not ok then target = k_tokens end
  if expirable('waking a waiter', target) then
    step('waking a waiter', wake_plain, target, 1, tonumber(a_limit),
      a_wake_ttl_ms)
  end
  step('waking the queue', wake_queue, k_queue, k_waiters, a_wake_prefix,
    t)
end
if why then return {1, why} end
return 1
