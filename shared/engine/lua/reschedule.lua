--[[
  Moves a not-yet-started event to a new time. The gen goes up, so a message already in the queue
  for the old time is recognised as stale and dropped.

  KEYS[1] due   KEYS[2] leased   KEYS[3] body   KEYS[4] meta   KEYS[5] stats
  ARGV[1] member   ARGV[2] runAt (ms)   ARGV[3] now (ms)   ARGV[4] dispatchUntil (ms)
  ARGV[5] dispatch lease (ms)

  Returns:
    {1}                  SCHEDULED: waiting in `due`
    {2, attempt, gen}    DISPATCHED: due within the look-ahead; the caller must send it
    {8, status}          CONFLICT: running or dead
    {4}                  NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local runAt = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local body = redis.call("HGET", KEYS[3], member)
if not body then
  return {4}
end
local status, attempt, gen = readMeta(KEYS[4], member, 0)
if status == "running" or status == "dead" then
  return {8, status}
end

if runAt <= tonumber(ARGV[4]) then
  writeMeta(KEYS[4], member, "dispatched", attempt, gen + 1, runAt)
  redis.call("ZREM", KEYS[1], member)
  redis.call("ZADD", KEYS[2], math.max(runAt, now) + tonumber(ARGV[5]), member)
  bumpStats(KEYS[5], member, body, status, "dispatched")
  return {2, attempt, gen + 1}
end

local waiting = "scheduled"
if attempt > 0 then
  waiting = "retrying"
end
writeMeta(KEYS[4], member, waiting, attempt, gen + 1, runAt)
redis.call("ZREM", KEYS[2], member)
redis.call("ZADD", KEYS[1], runAt, member)
bumpStats(KEYS[5], member, body, status, waiting)
return {1}
