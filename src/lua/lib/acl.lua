-- acl.lua: embedded in front of every script that asks (src/lua-text.sh
-- makes its questions from the script's RUNS lines). Redis runs a
-- script's commands with its caller's ACL, and a refused command stops
-- the script where it stands: after a DEL, before the wake-up that should
-- follow it. So a script first asks Redis 7 (redis.acl_check_cmd) whether
-- its caller may run each command it may run, on those keys and
-- channels, and writes nothing when one is refused; acquire also asks for
-- what the holder and the waiter will run later (extend, release, BLPOP,
-- SSUBSCRIBE), so a missing permission is found before the lock is
-- taken, not at its release. release.lua alone does not ask again: it
-- runs each step after its DEL apart (see there). Redis 6 cannot be
-- asked: there nothing is checked.
--
-- The generated pre-check calls acl(CMD, arg...) for each command (with
-- all its arguments), all inside acl_ask(function() ... end), then
-- returns acl_refused if it is set. Each question is asked as it comes,
-- with nothing built: a list of tables built per call first cost Redis as
-- much as the questions themselves.

local acl_can = redis.acl_check_cmd
-- The first refusal acl() met, as the error for the script to return:
-- "RLOCK_NOPERM +cmd" when the command itself is refused, "RLOCK_NOPERM ~
-- KEY CMD" for a key, "RLOCK_NOPERM & CHANNEL CMD" for the channel (or
-- the command: see channel_ok); nil while none was.
local acl_refused = nil

-- Why cmd with args {...} was refused: the key or channel it names that
-- the caller may not use, else the command itself. What only a refusal
-- needs is made in here, when one comes: every closure and table made at
-- the top of a script is made anew on each call, with the allocations
-- and garbage collection they bring.
local function acl_why(cmd, ...)
  -- Commands whose arguments are channels rather than keys, those
  -- checked here with no key at all (EVAL's numkeys is 0 in the checks),
  -- those whose arguments are all keys, and those whose permissions are
  -- given per subcommand (+pubsub|numsub).
  local CHANNEL = {SPUBLISH = true, PUBLISH = true, SSUBSCRIBE = true,
    SUBSCRIBE = true}
  local KEYLESS = {EVAL = true, EVALSHA = true, TIME = true, PUBSUB = true,
    INFO = true}
  local ALLKEYS = {DEL = true, EXISTS = true}
  local CONTAINER = {PUBSUB = true}
  -- A question about a command this server does not know (renamed away)
  -- is a no here, not an error: the refusal is still named.
  local function can(...)
    local known, yes = pcall(acl_can, ...)
    return known and yes
  end
  -- May the caller use key k at all? Asked with the EVAL or EVALSHA it
  -- runs us with (numkeys 0 asks for the command alone): Redis 7.0 reads
  -- past the arguments of a command checked with fewer than it takes (a
  -- crash), so no command is ever checked without its keys.
  local function key_ok(k)
    return (can('EVAL', 'x', '0') and can('EVAL', 'x', '1', k)) or
      (can('EVALSHA', 'x', '0') and can('EVALSHA', 'x', '1', k))
  end
  -- May the caller use channel ch? Yes if any command of pub/sub may; no
  -- answer (false) when it may run none of them, as a channel command
  -- cannot be asked about without its channel.
  local function channel_ok(ch)
    return can('SPUBLISH', ch, 'x') or can('PUBLISH', ch, 'x') or
      can('SSUBSCRIBE', ch) or can('SUBSCRIBE', ch)
  end
  local a = {...}
  local what
  if CHANNEL[cmd] then
    if not channel_ok(a[1]) then what = a[1] end
  elseif not KEYLESS[cmd] then
    for i = 1, ALLKEYS[cmd] and #a or 1 do
      if not key_ok(a[i]) then
        what = a[i]
        break
      end
    end
  end
  if what == nil then
    local name = string.lower(cmd)
    if CONTAINER[cmd] then name = name .. '|' .. string.lower(a[1]) end
    return redis.error_reply('RLOCK_NOPERM +' .. name)
  end
  return redis.error_reply('RLOCK_NOPERM ' ..
    (CHANNEL[cmd] and '&' or '~') .. ' ' .. what .. ' ' .. cmd)
end

-- The question asker: acl_can, or in acl_ask's second pass one that
-- takes a command this server does not know for a yes.
local acl_asker = acl_can

-- A refusal: the first is kept.
local function acl_no(cmd, ...)
  if not acl_refused then acl_refused = acl_why(cmd, ...) end
end

-- Ask whether the caller may run cmd with these arguments (all of them).
-- Call it inside acl_ask. Nothing but the question on the way: a script
-- asks dozens, on every call.
local function acl(cmd, ...)
  if not acl_asker(cmd, ...) then acl_no(cmd, ...) end
end

-- Ask a script's questions: fn calls acl() for each, writing nothing. A
-- question about a command this server does not know (renamed away in
-- its configuration) is an error: then they are all asked again, each in
-- a pcall, and such a command is not checked, as the scripts and waiters
-- do without some where the server has none. One pcall around them all,
-- not one around each: they are many, and all but always answered.
local function acl_ask(fn)
  if not acl_can then return end
  if not pcall(fn) then
    acl_refused = nil
    acl_asker = function(...)
      local known, yes = pcall(acl_can, ...)
      return not known or yes
    end
    fn()
  end
end
