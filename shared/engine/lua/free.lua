--[[
  Gives back the slots admit.lua took: on ack, retry, dead letter, and when start did not run the
  event after all. (A worker that dies gives its slots back when their deadline passes.)

  KEYS  K.running   (declared by name in scripts.ts)
  ARGV[1..] pairs: type, member

  Returns the number of slots given back.
]]

local tag = string.match(K.running, "^(.*):running$")
local freed = 0
for i = 1, #ARGV, 2 do
  freed = freed + redis.call("ZREM", tag .. ":slots:" .. ARGV[i], ARGV[i + 1])
  redis.call("ZREM", K.running, ARGV[i + 1])
end
return freed
