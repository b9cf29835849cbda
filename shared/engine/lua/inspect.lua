--[[
  Reads one event's live state atomically (its meta and the score that goes with its status).

  KEYS[1] due   KEYS[2] leased   KEYS[3] body   KEYS[4] meta
  ARGV[1] member

  Returns:
    {0, status, attempt, gen, runAt, body, heldBy}   OK; heldBy is "" unless the event is held
                                                     back by flow control (parked)
    {4}                                      NOT_FOUND (or unreadable: the next claim quarantines it)
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", KEYS[3], member)
if not body then
  return {4}
end
local dueScore = redis.call("ZSCORE", KEYS[1], member)
local status, attempt, gen, runAt = readMeta(KEYS[4], member, tonumber(dueScore or 0))
if not status then
  return {4}
end
return {0, status, attempt, gen, runAt, body, redis.call("HGET", shardTag(KEYS[1]) .. ":holds", member) or ""}
