-- fence_raise (--redlock): once a majority of masters granted KEY, each of
-- them learns the fence the holder will use, F = the largest any of them
-- gave. Any later majority shares a master with this one, and that master
-- then gives more than F: so fences still strictly increase per KEY.
-- KEYS: lock fence meta
-- ARGV: token fence fence_ttl_ms
-- fence (ARGV): F; meta: the holder's (a mutex: --redlock has no -N).
-- RUNS: GET lock; GET fence; SET fence 1 PX 1; HSET meta f 1
-- Returns 1, or 0 when KEY is not ours on this master (nothing done).
if redis.call('GET', k_lock) ~= a_token then return 0 end
local f = tonumber(a_fence)
local cur = tonumber(redis.call('GET', k_fence) or '0')
if cur > f then f = cur end
redis.call('SET', k_fence, string.format('%d', f), 'PX', a_fence_ttl_ms)
redis.call('HSET', k_meta, 'fence', a_fence)
return 1
