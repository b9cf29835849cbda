--[[
  How many events of each listed type of one tenant may start before the dispatcher's next tick:
  its allowance for claim.lua, and the reason for the rest. Read-only. An estimate: admit.lua, at
  start, is the judge.

  KEYS  K.running   (declared by name in scripts.ts)
  ARGV[1] horizon (ms): tokens that will have refilled by then count   ARGV[2] the tenant's cap (0: none)
  ARGV[3..] types

  Returns two fields per type, in order: allowance (-1: no limit applies), reason.
]]
-- @include bucket

local tag = string.match(K.running, "^(.*):running$")
local now = redisNow()
local tenantCap = tonumber(ARGV[2])
local tenantLeft = -1
if tenantCap > 0 then
  tenantLeft = math.max(0, tenantCap - redis.call("ZCOUNT", K.running, "(" .. now, "+inf"))
end
local out = {}
for i = 3, #ARGV do
  local eventType = ARGV[i]
  local cfg = redis.call("HMGET", tag .. ":cfg:" .. eventType, "paused", "rate", "burst", "max")
  local rate, burst, max = tonumber(cfg[2]), tonumber(cfg[3]), tonumber(cfg[4])
  local allowance, reason = tenantLeft, "concurrency"
  if cfg[1] == "1" then
    allowance, reason = 0, "paused"
  else
    if max then
      local free = math.max(0, max - redis.call("ZCOUNT", tag .. ":slots:" .. eventType, "(" .. now, "+inf"))
      if allowance < 0 or free < allowance then
        allowance = free
      end
    end
    if rate and rate > 0 then
      burst = burst or math.max(1, math.ceil(rate))
      local key = tag .. ":bucket:" .. eventType
      local tokens = math.floor(math.min(burst, bucketLevel(key, now, rate, burst) + tonumber(ARGV[1]) * rate / 1000))
      if allowance < 0 or tokens < allowance then
        allowance, reason = tokens, "rate"
      end
    end
  end
  out[#out + 1] = allowance
  out[#out + 1] = reason
end
return out
