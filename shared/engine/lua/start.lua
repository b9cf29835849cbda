--[[
  Marks a dispatched event as running, if the message that asks is the current one. This is the
  gate behind "never early", "cancel means cancel" and "one run per dispatch".

  KEYS[1] leased   KEYS[2] body   KEYS[3] meta   KEYS[4] stats
  ARGV[1] member   ARGV[2] gen (from the message)   ARGV[3] now (ms)   ARGV[4] run lease (ms)

  Returns:
    {0, attempt, body}   OK: running now, attempt counted
    {4}                  NOT_FOUND: not in the index (finished, cancelled, or Redis lost it)
    {5, status}          STALE: superseded by a later dispatch, a reschedule or a cancel
    {6}                  DUPLICATE: this dispatch is already running elsewhere
    {7, runAt}           EARLY: the event is not due yet; the caller must wait
]]
-- @include state

local member = ARGV[1]
local gen = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local body = redis.call("HGET", KEYS[2], member)
if not body then
  return {4}
end
local status, attempt, currentGen, runAt = readMeta(KEYS[3], member, 0)
if currentGen ~= gen then
  return {5, status}
end
if status == "running" then
  return {6}
end
if status ~= "dispatched" then
  return {5, status}
end
if now < runAt then
  return {7, runAt}
end

writeMeta(KEYS[3], member, "running", attempt + 1, gen, runAt)
redis.call("ZADD", KEYS[1], now + tonumber(ARGV[4]), member)
bumpStats(KEYS[4], member, body, "dispatched", "running")
return {0, attempt + 1, body}
