-- wake (--redlock): leave a wake token on a master whose release found
-- KEY not ours (it restarted empty, or our lease there ran out) while the
-- lock as a whole was released: a waiter may be blocked in BLPOP on this
-- master, and release.lua left it nothing.
-- KEYS: tokens
-- ARGV: limit wake_ttl_ms
-- tokens: the wake tokens; limit: N.
-- Returns 1; refused with RLOCK_NOPERM (acl.lua), nothing done, when the
-- ACL lacks a permission it needs.
acl_ask(function()
  acl_wake_plain(k_tokens)
end)
if acl_refused then return acl_refused end
wake_plain(k_tokens, 1, tonumber(a_limit), a_wake_ttl_ms)
return 1
