--[[
  Replays a dead letter: it is scheduled again at `runAt` with its attempts reset.

  KEYS[1] due   KEYS[2] dead   KEYS[3] body   KEYS[4] meta   KEYS[5] stats
  ARGV[1] member   ARGV[2] runAt (ms)

  Returns: {0} OK, {8, status} CONFLICT (not dead; "unreadable" when its meta cannot be read),
  {4} NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", KEYS[3], member)
if not body then
  return {4}
end
local status, _, gen, _, version = readMeta(KEYS[4], member, 0)
if status ~= "dead" then
  return {8, status or "unreadable"}
end

local runAt = tonumber(ARGV[2])
writeMeta(KEYS[4], member, "scheduled", 0, gen, runAt, version)
redis.call("ZREM", KEYS[2], member)
redis.call("ZADD", KEYS[1], runAt, member)
bumpStats(KEYS[5], member, body, "dead", "scheduled")
return {0}
