-- heartbeat: a --fair waiter that sleeps on in the queue says it is still
-- there (every 30 s: wait.c), its entry in P{K}:w due waiter_ttl_ms from
-- the server's now (lib/queue.lua).
-- KEYS: waiters
-- ARGV: token info waiter_ttl_ms shared
-- info: "user\31host\31pid\31cmd"; shared '1': a shared request's entry
-- (DUE followed by 's').
-- RUNS: TIME; HSET waiters x x; PTTL waiters; PEXPIRE waiters 1
-- Returns 1.
local ttl = tonumber(a_waiter_ttl_ms)
redis.call('HSET', k_waiters, a_token, string.format('%d', server_ms() +
  ttl) .. (a_shared == '1' and 's' or '') .. '\31' .. a_info)
if redis.call('PTTL', k_waiters) < ttl then
  redis.call('PEXPIRE', k_waiters, a_waiter_ttl_ms)
end
return 1
