-- last.lua: embedded in front of every script that calls it: the read of
-- P{K}:last (the hash of lib/record.lua) that status's scripts,
-- inspect.lua and redisson_inspect.lua, answer with.

-- The fields `names` of the last run, '' where absent; {} when no run is
-- recorded.
local function last_read(last, names)
  if redis.call('EXISTS', last) == 0 then return {} end
  local v = redis.call('HMGET', last, unpack(names))
  for i = 1, #names do v[i] = v[i] or '' end
  return v
end
