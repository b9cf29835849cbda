--[[
  Puts a running event whose handler failed back in `due`, at the time the backoff chose.

  KEYS[1] due   KEYS[2] leased   KEYS[3] body   KEYS[4] meta   KEYS[5] stats
  ARGV[1] member   ARGV[2] gen   ARGV[3] next runAt (ms)

  Returns: {0} OK, {5, status} STALE (status "unreadable" when its meta cannot be read), {4} NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", KEYS[3], member)
if not body then
  return {4}
end
local status, attempt, gen, _, version = readMeta(KEYS[4], member, 0)
if not status then
  return {5, "unreadable"}
end
if status ~= "running" or gen ~= tonumber(ARGV[2]) then
  return {5, status}
end

local runAt = tonumber(ARGV[3])
writeMeta(KEYS[4], member, "retrying", attempt, gen, runAt, version)
redis.call("ZREM", KEYS[2], member)
redis.call("ZADD", KEYS[1], runAt, member)
bumpStats(KEYS[5], member, body, "running", "retrying")
return {0}
