--[[
  Reads one event's live state atomically (its meta and the score that goes with its status).

  KEYS  K.due  K.leased  K.body  K.meta   (declared by name in scripts.ts)
  ARGV[1] member

  Returns:
    {0, status, attempt, gen, runAt, body, heldBy, version}
                                             OK; heldBy is "" unless the event is held back by
                                             flow control (parked); version as in reschedule.lua
    {4}                                      NOT_FOUND (or unreadable: the next claim quarantines it)
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", K.body, member)
if not body then
  return {CODE.NOT_FOUND}
end
local status, attempt, gen, runAt, version = readMeta(K.meta, member, dueScore(member) or 0)
if not status then
  return {CODE.NOT_FOUND}
end
local heldBy = redis.call("HGET", shardTag(K.due) .. ":holds", member) or ""
return {CODE.OK, status, attempt, gen, runAt, body, heldBy, version}
