--[[
  Gives back the slots admit.lua took: on ack, retry, dead letter, and when start did not run the
  event after all. (A worker that dies gives its slots back when their deadline passes.)

  KEYS[1] the tenant's running set (the per-type `slots:<type>` keys share its hash tag)
  ARGV[1..] pairs: type, member

  Returns the number of slots given back.
]]

local tag = string.match(KEYS[1], "^(.*):running$")
local freed = 0
for i = 1, #ARGV, 2 do
  freed = freed + redis.call("ZREM", tag .. ":slots:" .. ARGV[i], ARGV[i + 1])
  redis.call("ZREM", KEYS[1], ARGV[i + 1])
end
return freed
