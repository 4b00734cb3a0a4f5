-- meta.lua: embedded in front of every script that calls it. Where a
-- holder's meta is: a mutex holder's in the hash P{K}:meta, fields host
-- pid user cmd since lease fence (and ended exit hold_until once its run
-- ended and --min-hold keeps KEY); the -N holders' all in the one hash
-- P{K}:metas, the same fields named TOKEN:NAME, expiring with P{K}:sem.
-- So every key a script touches is one of its KEYS, however many hold.
-- A script passes (P{K}:meta, nil) for a mutex, (P{K}:metas, TOKEN) for
-- a -N holder.

-- The field names ... of the holder tok (nil: a mutex's, as they are).
local function meta_names(tok, ...)
  local f = {...}
  if tok then
    for i = 1, #f do f[i] = tok .. ':' .. f[i] end
  end
  return f
end

-- HMGET of the fields ... of the holder's meta (a mutex's with no table
-- made: the path every run takes).
local function meta_get(key, tok, ...)
  if not tok then return redis.call('HMGET', key, ...) end
  return redis.call('HMGET', key, unpack(meta_names(tok, ...)))
end

-- HSET of the pairs name, value, ... of the holder's meta.
local function meta_set(key, tok, ...)
  if not tok then
    redis.call('HSET', key, ...)
    return
  end
  local a = {...}
  for i = 1, #a, 2 do a[i] = tok .. ':' .. a[i] end
  redis.call('HSET', key, unpack(a))
end

-- The holder's meta gone (a -N holder's fields; a mutex's whole hash).
local function meta_drop(key, tok)
  if not tok then
    redis.call('DEL', key)
    return
  end
  redis.call('HDEL', key, unpack(meta_names(tok, 'host', 'pid', 'user',
    'cmd', 'since', 'lease', 'fence', 'ended', 'exit', 'hold_until')))
end
