--[[
  Gives back the slots admit.lua took: on ack, retry, dead letter, and when start did not run the
  event after all. (A worker that dies gives its slots back when their deadline passes.)

  KEYS  K.running   (declared by name in scripts.ts)
  ARGV[1..] pairs: type, member

  Returns the number of slots given back.
]]
-- @include slices

local tag = string.match(K.running, "^(.*):running$")
-- One ZREM a key for the whole call, not two commands an event.
local byType, members = {}, {}
for i = 1, #ARGV, 2 do
  local list = byType[ARGV[i]]
  if not list then
    list = {}
    byType[ARGV[i]] = list
  end
  list[#list + 1] = ARGV[i + 1]
  members[#members + 1] = ARGV[i + 1]
end
local freed = 0
for eventType, list in pairs(byType) do
  freed = freed + callInSlices("ZREM", tag .. ":slots:" .. eventType, list)
end
callInSlices("ZREM", K.running, members)
return freed
