-- undo (--redlock): take back a grant that made no majority, as
-- release.lua would, but wake nobody: the lock as a whole never was ours,
-- so a waiter has nothing new to see. (A waiter undoing its own partial
-- grant would otherwise leave itself a wake token, or a message, and
-- spin: try, undo, wake, try... while the holder keeps its majority.)
-- KEYS[1] lock  KEYS[2] holder meta  ARGV[1] token
-- Returns 1 when taken back, 0 when KEY was not ours (nothing done);
-- refused with RLOCK_NOPERM (acl.lua), nothing done, when the ACL lacks a
-- permission it needs.
acl_ask(function()
  acl('GET', KEYS[1])
  acl('DEL', KEYS[1], KEYS[2])
end)
if acl_refused then return acl_refused end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
