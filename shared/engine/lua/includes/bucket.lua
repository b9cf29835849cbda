-- Token buckets and clocks for flow control, inlined where a script says `-- @include bucket`.
-- A bucket is a hash {tokens, at}: it holds at most `burst` tokens and refills at `rate` tokens a
-- second; a missing bucket is full. So in any one second at most `burst + rate` tokens are taken.

local function redisNow()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function bucketLevel(key, now, rate, burst)
  local state = redis.call("HMGET", key, "tokens", "at")
  local tokens, at = tonumber(state[1]), tonumber(state[2])
  if not tokens or not at then
    return burst
  end
  if now > at then
    tokens = tokens + (now - at) * rate / 1000
  end
  return math.min(burst, tokens)
end

-- Takes n tokens, all or none. Returns true, or false and the ms until n tokens are there.
-- The bucket expires once it would be full again: a full bucket and a missing one are the same.
local function bucketTake(key, now, rate, burst, n)
  local tokens = bucketLevel(key, now, rate, burst)
  if tokens < n then
    return false, math.max(1, math.ceil((n - tokens) * 1000 / rate))
  end
  tokens = tokens - n
  redis.call("HSET", key, "tokens", tostring(tokens), "at", now)
  redis.call("PEXPIRE", key, math.ceil((burst - tokens) * 1000 / rate) + 1000)
  return true, 0
end
