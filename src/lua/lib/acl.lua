-- acl.lua: embedded in front of every script that calls it
-- (src/lua-text.sh), before queue.lua. Redis runs a script's commands with its caller's ACL, and a
-- refused command stops the script where it stands: after a DEL, before
-- the wake-up that should follow it. So every script first asks Redis 7
-- (redis.acl_check_cmd) whether its caller may run each command it may
-- run, on those keys and channels, and writes nothing when one is refused;
-- acquire also asks for what the holder and the waiter will run later
-- (extend, release, BLPOP, SSUBSCRIBE), so a missing permission is found
-- before the lock is taken, not at its release. Redis 6 cannot be asked:
-- there nothing is checked.

-- Commands whose arguments are channels rather than keys, and those
-- checked here with no key at all (EVAL's numkeys is 0 in the checks).
local ACL_CHANNEL = {SPUBLISH = true, PUBLISH = true, SSUBSCRIBE = true,
  SUBSCRIBE = true}
local ACL_KEYLESS = {EVAL = true, EVALSHA = true, TIME = true,
  PUBSUB = true}
-- Commands whose permissions are given per subcommand (+pubsub|numsub).
local ACL_CONTAINER = {PUBSUB = true}

-- May the caller use key k at all? Asked with the EVAL or EVALSHA it runs
-- us with (numkeys 0 asks for the command alone): Redis 7.0 reads past
-- the arguments of a command checked with fewer than it takes (a crash),
-- so no command is ever checked without its keys.
local function acl_key_ok(can, k)
  return (can('EVAL', 'x', '0') and can('EVAL', 'x', '1', k)) or
    (can('EVALSHA', 'x', '0') and can('EVALSHA', 'x', '1', k))
end

-- May the caller use channel ch? Yes if any command of pub/sub may; no
-- answer (false) when it may run none of them, as a channel command cannot
-- be asked about without its channel.
local function acl_channel_ok(can, ch)
  return can('SPUBLISH', ch, 'x') or can('PUBLISH', ch, 'x') or
    can('SSUBSCRIBE', ch) or can('SUBSCRIBE', ch)
end

-- The first check in list {{CMD, arg...}, ...} (each with all its
-- arguments) the caller may not run, as the error to return, or nil:
-- "RLOCK_NOPERM +cmd" when the command itself is refused, "RLOCK_NOPERM ~
-- KEY CMD" for the key, "RLOCK_NOPERM & CHANNEL CMD" for the channel (or
-- the command: see acl_channel_ok). A command this server does not know
-- is not checked.
local function acl_refusal(list)
  local can = redis.acl_check_cmd
  if not can then return nil end
  for _, c in ipairs(list) do
    local known, yes = pcall(can, unpack(c))
    if known and not yes then
      local what = c[2]
      if ACL_KEYLESS[c[1]] then
        what = nil
      elseif ACL_CHANNEL[c[1]] then
        if acl_channel_ok(can, c[2]) then what = nil end
      elseif acl_key_ok(can, c[2]) then
        what = nil
      end
      if what == nil then
        local name = string.lower(c[1])
        if ACL_CONTAINER[c[1]] then
          name = name .. '|' .. string.lower(c[2])
        end
        return redis.error_reply('RLOCK_NOPERM +' .. name)
      end
      return redis.error_reply('RLOCK_NOPERM ' ..
        (ACL_CHANNEL[c[1]] and '&' or '~') .. ' ' .. what .. ' ' .. c[1])
    end
  end
  return nil
end

-- Append the checks of list b to list a.
local function acl_add(a, b)
  for _, c in ipairs(b) do a[#a + 1] = c end
  return a
end

-- What wake_queue (queue.lua) runs: q the queue, wpre and wakepre the
-- prefixes of the waiters' keys and channels ('x' stands for a token).
local function acl_wake_queue(q, wpre, wakepre)
  return {{'LINDEX', q, '0'}, {'EXISTS', wpre .. 'x'}, {'LPOP', q},
    {'DEL', wpre .. 'x'}, {'SPUBLISH', wakepre .. 'x', 'turn'}}
end

-- What wake_plain runs on the list of wake tokens.
local function acl_wake_plain(tokens)
  return {{'LPUSH', tokens, '1'}, {'LTRIM', tokens, '0', '0'},
    {'PEXPIRE', tokens, '1'}}
end

-- extend.lua, with its five holder keys and the N of the lock.
local function acl_extend(lock, meta, sem, limit, q, n)
  local l
  if n == 1 then
    l = {{'GET', lock}, {'PEXPIRE', lock, '1'}}
  else
    l = {{'TIME'}, {'ZSCORE', sem, 'x'}, {'ZREM', sem, 'x'},
      {'ZADD', sem, '1', 'x'}, {'ZRANGE', sem, '0', '0'},
      {'PEXPIRE', sem, '1'}, {'PEXPIRE', limit, '1'}}
  end
  return acl_add(l, {{'PEXPIRE', meta, '1'}, {'PTTL', q},
    {'PEXPIRE', q, '1'}})
end

-- release.lua: the holder keys, the wake tokens, and the wake channel and
-- the waiters' key and channel prefixes.
local function acl_release(lock, meta, sem, limit, q, tokens, wake, wpre,
    wakepre, n)
  local l
  if n == 1 then
    l = {{'GET', lock}, {'DEL', lock, meta}}
  else
    l = {{'ZREM', sem, 'x'}, {'DEL', meta}, {'ZCARD', sem},
      {'DEL', sem, limit}}
  end
  acl_add(l, {{'SPUBLISH', wake, 'released'}})
  acl_add(l, acl_wake_plain(tokens))
  return acl_add(l, acl_wake_queue(q, wpre, wakepre))
end

-- dequeue.lua: a --fair waiter leaves the queue q, deleting its key w.
local function acl_dequeue(q, w, wpre, wakepre)
  return acl_add({{'LINDEX', q, '0'}, {'LREM', q, '1', 'x'}, {'DEL', w}},
    acl_wake_queue(q, wpre, wakepre))
end
