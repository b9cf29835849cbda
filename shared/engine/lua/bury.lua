--[[
  Moves a running event to the dead letters: attempts exhausted or a non-retryable error.
  Its body stays, so the dead letter can be inspected and replayed.

  KEYS[1] leased   KEYS[2] dead   KEYS[3] body   KEYS[4] meta   KEYS[5] stats
  ARGV[1] member   ARGV[2] gen   ARGV[3] now (ms)

  Returns: {0} OK, {5, status} STALE (status "unreadable" when its meta cannot be read), {4} NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", KEYS[3], member)
if not body then
  return {4}
end
local status, attempt, gen, runAt, version = readMeta(KEYS[4], member, 0)
if not status then
  return {5, "unreadable"}
end
if status ~= "running" or gen ~= tonumber(ARGV[2]) then
  return {5, status}
end

writeMeta(KEYS[4], member, "dead", attempt, gen, runAt, version)
redis.call("ZREM", KEYS[1], member)
redis.call("ZADD", KEYS[2], tonumber(ARGV[3]), member)
bumpStats(KEYS[5], member, body, "running", "dead")
return {0}
