--[[
  Re-indexes events from the durable journal after Redis lost them. An event the index already
  knows is left alone. The gen starts from `now`, so no message sent before the loss can match a
  dispatch made after it.

  KEYS[1] due   KEYS[2] dead   KEYS[3] body   KEYS[4] meta   KEYS[5] stats
  ARGV[1] now (ms)
  ARGV[2..] quintuples: member, runAt (ms), body, attempt, status ("scheduled"|"retrying"|"dead")

  Returns one code per event, in order: 10 RESTORED, 11 PRESENT
]]
-- @include state

local now = tonumber(ARGV[1])
local codes = {}

for i = 2, #ARGV, 5 do
  local member, runAt, body = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local attempt, status = tonumber(ARGV[i + 3]), ARGV[i + 4]
  if redis.call("HSETNX", KEYS[3], member, body) == 0 then
    codes[#codes + 1] = 11
  else
    writeMeta(KEYS[4], member, status, attempt, now, runAt)
    if status == "dead" then
      redis.call("ZADD", KEYS[2], now, member)
    else
      redis.call("ZADD", KEYS[1], runAt, member)
    end
    countStats(member, body, false, status)
    codes[#codes + 1] = 10
  end
end

flushStats(KEYS[5])
return codes
