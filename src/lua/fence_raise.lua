-- fence_raise (--redlock): once a majority of masters granted KEY, each of
-- them learns the fence the holder will use, F = the largest any of them
-- gave. Any later majority shares a master with this one, and that master
-- then gives more than F: so fences still strictly increase per KEY.
-- KEYS[1] lock  KEYS[2] fence  KEYS[3] holder meta
-- ARGV[1] token  ARGV[2] F  ARGV[3] fence ttl ms
-- Returns 1, or 0 when KEY is not ours on this master (nothing done).
acl_ask(function()
  acl('GET', KEYS[1])
  acl('GET', KEYS[2])
  acl('SET', KEYS[2], '1', 'PX', '1')
  acl('HSET', KEYS[3], 'fence', '1')
end)
if acl_refused then return acl_refused end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local f = tonumber(ARGV[2])
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
if cur > f then f = cur end
redis.call('SET', KEYS[2], string.format('%d', f), 'PX', ARGV[3])
redis.call('HSET', KEYS[3], 'fence', ARGV[2])
return 1
