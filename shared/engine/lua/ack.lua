--[[
  Finishes a running event after its handler succeeded: it leaves the index entirely.

  KEYS[1] leased   KEYS[2] body   KEYS[3] meta   KEYS[4] stats
  ARGV[1] member   ARGV[2] gen

  Returns:
    {0}           OK
    {5, status}   STALE: not running under this gen (cancelled, superseded); nothing changed
    {4}           NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", KEYS[2], member)
if not body then
  return {4}
end
local status, _, gen = readMeta(KEYS[3], member, 0)
if status ~= "running" or gen ~= tonumber(ARGV[2]) then
  return {5, status}
end

redis.call("ZREM", KEYS[1], member)
redis.call("HDEL", KEYS[2], member)
redis.call("HDEL", KEYS[3], member)
bumpStats(KEYS[4], member, body, "running", "succeeded")
return {0}
