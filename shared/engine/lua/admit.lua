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
-- @include slices

local tag = string.match(K.running, "^(.*):running$")
local now = redisNow()
local deadline = now + tonumber(ARGV[1])
local tenantCap = tonumber(ARGV[2])

-- Per type, read once a call: its limits, and how many slots it holds (expired ones pruned first).
-- The slots this call takes are counted here and written at the end, one ZADD a key: the same
-- decisions as writing each at once, for a few commands a call instead of several an event.
local types = {}
local function typeOf(eventType)
  local t = types[eventType]
  if not t then
    local cfg = redis.call("HMGET", tag .. ":cfg:" .. eventType, "paused", "rate", "burst", "max")
    local slots = tag .. ":slots:" .. eventType
    t = { paused = cfg[1] == "1", rate = tonumber(cfg[2]), burst = tonumber(cfg[3]), max = tonumber(cfg[4]), slots = slots }
    redis.call("ZREMRANGEBYSCORE", slots, "-inf", now)
    t.held = t.max and redis.call("ZCARD", slots)
    t.adds = {}
    types[eventType] = t
  end
  return t
end

redis.call("ZREMRANGEBYSCORE", K.running, "-inf", now)
local running = tenantCap > 0 and redis.call("ZCARD", K.running) or 0
local runningAdds = {}
local admittedHere = {}
local out = {}
for i = 3, #ARGV, 2 do
  local eventType, member = ARGV[i], ARGV[i + 1]
  local t = typeOf(eventType)
  local reason, retryAfter, again = false, 0, false
  if t.paused then
    reason = "paused"
  elseif admittedHere[member] or redis.call("ZSCORE", K.running, member) then
    -- Already admitted (the same dispatch asked twice): keep its slot, take nothing new.
    again = true
  elseif t.max and t.held >= t.max then
    reason = "concurrency"
  elseif tenantCap > 0 and running >= tenantCap then
    reason = "concurrency"
  elseif t.rate and t.rate > 0 then
    local ok, wait = bucketTake(tag .. ":bucket:" .. eventType, now, t.rate, t.burst or math.max(1, math.ceil(t.rate)), 1)
    if not ok then
      reason, retryAfter = "rate", wait
    end
  end
  if reason then
    out[#out + 1] = 1; out[#out + 1] = reason; out[#out + 1] = retryAfter
  else
    if not again then
      admittedHere[member] = true
      running = running + 1
      if t.max then
        t.held = t.held + 1
      end
    end
    t.adds[#t.adds + 1] = deadline
    t.adds[#t.adds + 1] = member
    runningAdds[#runningAdds + 1] = deadline
    runningAdds[#runningAdds + 1] = member
    out[#out + 1] = 0; out[#out + 1] = ""; out[#out + 1] = 0
  end
end

for _, t in pairs(types) do
  callInSlices("ZADD", t.slots, t.adds)
end
callInSlices("ZADD", K.running, runningAdds)
return out
