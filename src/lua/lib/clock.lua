-- clock.lua: embedded in front of every script that calls it.

-- The server's time in ms, as a number.
local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
