--[[
  The flow-control gate in front of start.lua: decides, atomically for one tenant, which of its
  dispatched events may start now. An admitted event takes a token from its type's rate bucket, a
  slot in its type's concurrency set and one in its tenant's running set; slots are sorted sets
  scored by their deadline (the run lease), so a worker that dies holding one gives it back when
  the deadline passes: every call prunes expired slots first. free.lua gives them back on every
  outcome. Judged by Redis's clock, so no worker's clock matters.

  KEYS  K.running   (declared by name in scripts.ts)
        K.running is the tenant's running set; its hash tag is the tenant's limits tag, which the
        per-type `cfg:<type>`, `bucket:<type>` and `slots:<type>` keys share
  ARGV[1] slot lease (ms)   ARGV[2] the tenant's cap on running events (0: none)
  ARGV[3..] pairs: type, member

  Returns three fields per event, in order:
    0, "", 0                   admitted (again, without a new token, when it already holds a slot)
    1, reason, retryAfterMs    held back: "paused" | "rate" | "concurrency"; retryAfterMs is when a
                               rate token is due (0 for the others)
]]
-- @include bucket

local tag = string.match(K.running, "^(.*):running$")
local now = redisNow()
local deadline = now + tonumber(ARGV[1])
local tenantCap = tonumber(ARGV[2])
local pruned = {}
local function prune(key)
  if not pruned[key] then
    redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
    pruned[key] = true
  end
end

prune(K.running)
local out = {}
for i = 3, #ARGV, 2 do
  local eventType, member = ARGV[i], ARGV[i + 1]
  local cfg = redis.call("HMGET", tag .. ":cfg:" .. eventType, "paused", "rate", "burst", "max")
  local rate, burst, max = tonumber(cfg[2]), tonumber(cfg[3]), tonumber(cfg[4])
  local slots = tag .. ":slots:" .. eventType
  prune(slots)
  local reason, retryAfter = false, 0
  if cfg[1] == "1" then
    reason = "paused"
  elseif redis.call("ZSCORE", K.running, member) then
    -- Already admitted (the same dispatch asked twice): keep its slot, take nothing new.
    reason = false
  elseif max and redis.call("ZCARD", slots) >= max then
    reason = "concurrency"
  elseif tenantCap > 0 and redis.call("ZCARD", K.running) >= tenantCap then
    reason = "concurrency"
  elseif rate and rate > 0 then
    local ok, wait = bucketTake(tag .. ":bucket:" .. eventType, now, rate, burst or math.max(1, math.ceil(rate)), 1)
    if not ok then
      reason, retryAfter = "rate", wait
    end
  end
  if reason then
    out[#out + 1] = 1; out[#out + 1] = reason; out[#out + 1] = retryAfter
  else
    redis.call("ZADD", slots, deadline, member)
    redis.call("ZADD", K.running, deadline, member)
    out[#out + 1] = 0; out[#out + 1] = ""; out[#out + 1] = 0
  end
end
return out
