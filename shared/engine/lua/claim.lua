--[[
  Claims up to `limit` events of one shard for dispatch: first leases that expired (a send or a
  worker that never finished), then events due before `dueUntil`. Each claimed event is moved to
  `leased` with a new deadline and a new gen; nothing is deleted, so a crash after this script
  means a redelivery when the lease runs out, never a loss. O(log N + M).

  KEYS[1] due   KEYS[2] leased   KEYS[3] body   KEYS[4] meta   KEYS[5] stats   KEYS[6] epoch
  ARGV[1] now (ms)   ARGV[2] dueUntil (ms)   ARGV[3] limit   ARGV[4] dispatch lease (ms)

  Returns:
    {9}                          EPOCH_MISSING: the shard's index may be incomplete; rebuild first
    {0, member, runAt, attempt, gen, redelivered(0|1), ...}   OK, five fields per claimed event
]]
-- @include state

if redis.call("EXISTS", KEYS[6]) == 0 then
  return {9}
end

local now = tonumber(ARGV[1])
local dueUntil = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local leaseMs = tonumber(ARGV[4])
local out = {0}
local leases = {}
local metas = {}
local fromDue = {}

local function claim(member, status, attempt, gen, runAt, redelivered)
  local body = redis.call("HGET", KEYS[3], member)
  if not body then
    -- An orphan entry (its body is gone): drop it rather than dispatch something unrunnable.
    redis.call("ZREM", KEYS[1], member)
    redis.call("ZREM", KEYS[2], member)
    redis.call("HDEL", KEYS[4], member)
    return
  end
  metas[#metas + 1] = member
  metas[#metas + 1] = formatMeta("dispatched", attempt, gen + 1, runAt)
  leases[#leases + 1] = math.max(runAt, now) + leaseMs
  leases[#leases + 1] = member
  countStats(member, body, status, "dispatched")
  out[#out + 1] = member
  out[#out + 1] = runAt
  out[#out + 1] = attempt
  out[#out + 1] = gen + 1
  out[#out + 1] = redelivered
end

local expired = redis.call("ZRANGEBYSCORE", KEYS[2], "-inf", now, "LIMIT", 0, limit)
for _, member in ipairs(expired) do
  local status, attempt, gen, runAt = readMeta(KEYS[4], member, now)
  claim(member, status, attempt, gen, runAt, 1)
end

local room = limit - #expired
if room > 0 then
  local due = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", dueUntil, "WITHSCORES", "LIMIT", 0, room)
  for i = 1, #due, 2 do
    local member, runAt = due[i], tonumber(due[i + 1])
    local status, attempt, gen = readMeta(KEYS[4], member, runAt)
    fromDue[#fromDue + 1] = member
    claim(member, status, attempt, gen, runAt, 0)
  end
end

if #fromDue > 0 then
  callInSlices("ZREM", KEYS[1], fromDue)
end
if #metas > 0 then
  callInSlices("HSET", KEYS[4], metas)
end
if #leases > 0 then
  callInSlices("ZADD", KEYS[2], leases)
end
flushStats(KEYS[5])
return out
