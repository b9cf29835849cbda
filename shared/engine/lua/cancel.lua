--[[
  Cancels an event that has not started: it leaves the index at once, so a message already in the
  queue finds nothing when it arrives and is dropped.

  KEYS[1] due   KEYS[2] leased   KEYS[3] dead   KEYS[4] body   KEYS[5] meta   KEYS[6] stats
  ARGV[1] member

  Returns:
    {0, previous status}   OK
    {8, status}            CONFLICT: running or dead; nothing changed
    {4}                    NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", KEYS[4], member)
if not body then
  return {4}
end
local status = readMeta(KEYS[5], member, 0)
if status == "running" or status == "dead" then
  return {8, status}
end

redis.call("ZREM", KEYS[1], member)
redis.call("ZREM", KEYS[2], member)
redis.call("HDEL", KEYS[4], member)
redis.call("HDEL", KEYS[5], member)
bumpStats(KEYS[6], member, body, status, "cancelled")
return {0, status}
