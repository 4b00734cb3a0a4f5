-- force_release: break KEY whoever holds it (rlock release --force).
-- KEYS: lock meta metas sem limit queue waiters tokens shares writers
-- KEYS: wtokens broken
-- ARGV: wake wake_prefix wake_ttl_ms
-- meta: a mutex holder's, metas: the -N holders' (lib/meta.lua); queue
-- and waiters: the --fair queue (lib/queue.lua); tokens: the wake tokens;
-- wake: the channel P{K}:wake; wake_prefix: "P{K}:wake:"; shares,
-- writers, wtokens: a shared KEY's (lib/shared.lua), every share broken;
-- broken: where the holders broken are told (P{K}:broken).
-- RUNS: TIME; GET lock; HMGET meta user
-- RUNS: DEL lock meta
-- RUNS: ZRANGEBYSCORE sem 0 0; HMGET metas x; GET limit; DEL sem limit metas
-- RUNS: SPUBLISH =wake x; LPUSH tokens 1; LTRIM tokens 0 0; PEXPIRE tokens 1
-- RUNS: LINDEX queue 0; HGET waiters x; LPOP queue; HDEL waiters x
-- RUNS: SPUBLISH =wake_prefix+x x; PUBLISH? =wake x
-- RUNS: PUBLISH? =wake_prefix+x x; PUBSUB? SHARDNUMSUB =wake_prefix+x
-- RUNS: PUBSUB? NUMSUB =wake_prefix+x; ZRANGEBYSCORE shares 0 0
-- RUNS: DEL lock shares metas; ZCOUNT writers 0 0; LPUSH wtokens 1
-- RUNS: LTRIM wtokens 0 0; PEXPIRE wtokens 1; LRANGE queue 0 0
-- RUNS: LPUSH broken 1; PEXPIRE broken 1
-- RUNS: INFO? server; HSET? waiters x x
-- Returns the holders broken, {{user, host, pid, cmd}, ...} ('' where
-- rlock wrote nothing); empty when nothing was held, and then nothing has
-- been written.
-- Invariants: the fencing counter stays, so the next holder's fence is
-- still greater than the broken one's. The --fair queue stays too and its
-- live head is told its turn came, as on a normal release; plain waiters
-- (BLPOP on tokens) get one token per slot now free, at most N. The
-- broken holders are told at once: broken gets one element for each (for
-- wake_ttl_ms), and a holder blocked in BLPOP on it asks whether the lock
-- is still its own when one comes.
local now = server_ms()
local broken, slots = {}, 0

local function who(m)
  broken[#broken + 1] = {m[1] or '', m[2] or '', m[3] or '', m[4] or ''}
end

local cur = redis.call('GET', k_lock)
if cur == 'shared' then
  -- Every share, and the metas of lapsed ones too: nothing may outlive
  -- the shares.
  for _, tok in ipairs(redis.call('ZRANGEBYSCORE', k_shares,
      string.format('(%d', now), '+inf')) do
    who(redis.call('HMGET', k_metas, unpack(meta_names(tok, 'user', 'host',
      'pid', 'cmd'))))
  end
  redis.call('DEL', k_lock, k_shares, k_metas)
  slots = 1
elseif cur then
  who(redis.call('HMGET', k_meta, 'user', 'host', 'pid', 'cmd'))
  redis.call('DEL', k_lock, k_meta)
  slots = 1
end
local live = redis.call('ZRANGEBYSCORE', k_sem, string.format('(%d', now),
  '+inf')
if #live > 0 then
  for _, tok in ipairs(live) do
    who(meta_get(k_metas, tok, 'user', 'host', 'pid', 'cmd'))
  end
  slots = tonumber(redis.call('GET', k_limit) or '') or #live
  -- Expired members' metas too: nothing may outlive the semaphore.
  redis.call('DEL', k_sem, k_limit, k_metas)
end
if #broken == 0 then return broken end

publish(a_wake, 'released')
wake_plain(wake_target(k_writers, k_tokens, k_wtokens, now), slots, slots,
  a_wake_ttl_ms)
wake_queue(k_queue, k_waiters, a_wake_prefix, now)
for _ in ipairs(broken) do redis.call('LPUSH', k_broken, '1') end
redis.call('PEXPIRE', k_broken, a_wake_ttl_ms)
return broken
