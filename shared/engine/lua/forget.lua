--[[
  Removes an event from the index whatever its state, when the durable journal says it already
  finished (for example a worker crashed between the journal write and the ack), or when the
  entry is a leftover of an older event under the same id whose journal item has expired.

  KEYS[1] due   KEYS[2] leased   KEYS[3] dead   KEYS[4] body   KEYS[5] meta   KEYS[6] stats
  ARGV[1] member   ARGV[2] final status for the counters ("succeeded"|"cancelled"|"dead"), or ""
          to only remove it from the counters (a leftover)

  Returns: {0, previous status} OK, {4} NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", KEYS[4], member)
if not body then
  return {4}
end
-- An unreadable meta has no status to count down from.
local status = readMeta(KEYS[5], member, 0)

unpark(shardTag(KEYS[1]), member, body)
redis.call("ZREM", KEYS[1], member)
redis.call("ZREM", KEYS[2], member)
redis.call("ZREM", KEYS[3], member)
redis.call("HDEL", KEYS[4], member)
redis.call("HDEL", KEYS[5], member)
local final = ARGV[2]
if final == "" then
  final = false
end
bumpStats(KEYS[6], member, body, status, final)
return {0, status or "unreadable"}
