-- wake (--redlock): leave a wake token on a master whose release found
-- KEY not ours (it restarted empty, or our lease there ran out) while the
-- lock as a whole was released: a waiter may be blocked in BLPOP on this
-- master, and release.lua left it nothing.
-- KEYS[1] wake tokens  ARGV[1] N  ARGV[2] wake token ttl ms
-- Returns 1; refused with RLOCK_NOPERM (acl.lua), nothing done, when the
-- ACL lacks a permission it needs.
acl_ask(function()
  acl_wake_plain(KEYS[1])
end)
if acl_refused then return acl_refused end
wake_plain(KEYS[1], 1, tonumber(ARGV[1]), ARGV[2])
return 1
