-- shared.lua: embedded in front of every script that calls it. A KEY held
-- shared (-s): P{K} holds the string 'shared' (no token is 6 bytes), so
-- an exclusive request, rlock's or a plain SET NX client's, finds it
-- taken; the sorted set P{K}:sh has each shared holder's token scored by
-- the server ms its own lease ends at, and P{K}:metas their metas
-- (lib/meta.lua). P{K}, P{K}:sh and P{K}:metas expire together, with the
-- share that ends last: a share whose holder died (SIGKILL) ends with its
-- own lease, whatever the others do. Exclusive requests that readers wait
-- for are in the sorted set P{K}:xw, scored by when their claim lapses
-- unless they try again (a waiter that died stops readers that long).

-- Give P{K}, its shares and their metas the expiry of the share that ends
-- last, or delete them when there is none; the shares left.
local function shares_settle(lock, shares, metas, now)
  local last = redis.call('ZRANGE', shares, -1, -1, 'WITHSCORES')
  if not last[2] then
    if redis.call('GET', lock) == 'shared' then redis.call('DEL', lock) end
    redis.call('DEL', shares, metas)
    return 0
  end
  local ttl = math.max(tonumber(last[2]) - now, 1)
  if redis.call('GET', lock) == 'shared' then
    redis.call('PEXPIRE', lock, ttl)
  end
  redis.call('PEXPIRE', shares, ttl)
  redis.call('PEXPIRE', metas, ttl)
  return redis.call('ZCARD', shares)
end

-- Drop the shares whose lease has ended, and their metas.
local function shares_prune(shares, metas, now)
  for _, tok in ipairs(redis.call('ZRANGEBYSCORE', shares, '-inf', now)) do
    meta_drop(metas, tok)
  end
  redis.call('ZREMRANGEBYSCORE', shares, '-inf', now)
end

-- How many exclusive requests readers wait for now (lapsed ones go).
local function writers_waiting(writers, now)
  redis.call('ZREMRANGEBYSCORE', writers, '-inf', now)
  return redis.call('ZCARD', writers)
end

-- Where a release's wake token goes: to the exclusive waiters (who BLPOP
-- wtokens as well) when readers wait for one, since a reader woken then
-- could only go back to sleep; else to every plain waiter.
local function wake_target(writers, tokens, wtokens, now)
  if redis.call('ZCOUNT', writers, string.format('(%d', now), '+inf') > 0 then
    return wtokens
  end
  return tokens
end
