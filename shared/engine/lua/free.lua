--[[
  Gives back the slots admit.lua took: on ack, retry, dead letter, and when start did not run the
  event after all. (A worker that dies gives its slots back when their deadline passes.)

  KEYS  K.running   (declared by name in scripts.ts)
  ARGV[1..] pairs: type, member

  Returns the number of slots given back.
]]

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
local function removeAll(key, list)
  local removed = 0
  for s = 1, #list, 4000 do
    removed = removed + redis.call("ZREM", key, unpack(list, s, math.min(s + 3999, #list)))
  end
  return removed
end
local freed = 0
for eventType, list in pairs(byType) do
  freed = freed + removeAll(tag .. ":slots:" .. eventType, list)
end
if #members > 0 then
  removeAll(K.running, members)
end
return freed
