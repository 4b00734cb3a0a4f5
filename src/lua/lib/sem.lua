-- sem.lua: embedded in front of every script that calls it. A -N
-- semaphore: the sorted set P{K}:sem has each holder's token scored by the
-- server ms its lease ends at, P{K}:limit holds N and P{K}:metas the
-- holders' metas (lib/meta.lua); the three expire together, with the
-- slot that ends last. The caller passes them from its KEYS.

-- Give the semaphore's keys the expiry of its slot that ends last (the
-- set has one: the caller has just written or kept a slot).
local function sem_expiry(sem, limit, metas, now)
  local last = redis.call('ZRANGE', sem, -1, -1, 'WITHSCORES')
  local ttl = tonumber(last[2]) - now
  redis.call('PEXPIRE', sem, ttl)
  redis.call('PEXPIRE', limit, ttl)
  redis.call('PEXPIRE', metas, ttl)
end
