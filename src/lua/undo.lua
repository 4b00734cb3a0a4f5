-- undo (--redlock): take back a grant that made no majority, as
-- release.lua would, but wake nobody: the lock as a whole never was ours,
-- so a waiter has nothing new to see. (A waiter undoing its own partial
-- grant would otherwise leave itself a wake token, or a message, and
-- spin: try, undo, wake, try... while the holder keeps its majority.)
-- KEYS: lock meta
-- ARGV: token
-- RUNS: GET lock; DEL lock meta
-- Returns 1 when taken back, 0 when KEY was not ours (nothing done);
-- refused with RLOCK_NOPERM, nothing done, when the ACL lacks a
-- permission it needs.
if redis.call('GET', k_lock) ~= a_token then return 0 end
redis.call('DEL', k_lock, k_meta)
return 1
