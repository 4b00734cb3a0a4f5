-- The keys of this node whose PTTL is -1: no expiry (-2, expired since
-- the SCAN, is gone). For the tests' "nothing left without an expiry"
-- checks (helper.bash, topology.bash), one round trip per node; run with
-- EVAL_RO, so CLIENT PAUSE WRITE, maxmemory or a replica do not stop it.
local c, out = '0', {}
repeat
	local r = redis.call('SCAN', c, 'COUNT', 1000)
	c = r[1]
	for _, k in ipairs(r[2]) do
		if redis.call('PTTL', k) == -1 then out[#out + 1] = k end
	end
until c == '0'
return out
