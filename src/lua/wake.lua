-- wake (--redlock): leave a wake token on a master whose release found
-- KEY not ours (it restarted empty, or our lease there ran out) while the
-- lock as a whole was released: a waiter may be blocked in BLPOP on this
-- master, and release.lua left it nothing.
-- KEYS: tokens
-- ARGV: limit wake_ttl_ms
-- tokens: the wake tokens; limit: N.
-- RUNS: LPUSH tokens 1; LTRIM tokens 0 0; PEXPIRE tokens 1
-- Returns 1; refused with RLOCK_NOPERM, nothing done, when the ACL lacks
-- a permission it needs.
wake_plain(k_tokens, 1, tonumber(a_limit), a_wake_ttl_ms)
return 1
