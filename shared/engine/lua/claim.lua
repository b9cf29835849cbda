--[[
  Claims up to `limit` events of one shard for dispatch: first leases that expired (a send or a
  worker that never finished), then events due before `dueUntil`. Each claimed event is moved to
  `leased` with a new deadline and a new gen; nothing is deleted, so a crash after this script
  means a redelivery when the lease runs out, never a loss. O(log N + M).

  An entry whose meta cannot be read is moved to the quarantine (see `quarantine` in state.lua)
  instead of being claimed, so one bad entry never fails the shard's claims again.

  KEYS  K.due  K.leased  K.body  K.meta  K.stats  K.epoch  K.quarantine   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] dueUntil (ms)   ARGV[3] limit   ARGV[4] dispatch lease (ms)

  Returns:
    {EPOCH_MISSING}   the shard's index may be incomplete; rebuild first
    {OK, q, member1..member_q, member, runAt, attempt, gen, redelivered(0|1), ...}
                      q members quarantined by this call, then five fields per claimed event
]]
-- @include state

if redis.call("EXISTS", K.epoch) == 0 then
  return {CODE.EPOCH_MISSING}
end

local now = tonumber(ARGV[1])
local dueUntil = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local leaseMs = tonumber(ARGV[4])
local out = {}
local quarantined = {}
local leases = {}
local metas = {}
local fromDue = {}

local function claim(member, status, attempt, gen, runAt, version, redelivered)
  if not status then
    quarantine(K, member, "unreadable meta")
    quarantined[#quarantined + 1] = member
    return
  end
  local body = redis.call("HGET", K.body, member)
  if not body then
    -- An orphan entry (its body is gone): drop it rather than dispatch something unrunnable.
    redis.call("ZREM", K.due, member)
    redis.call("ZREM", K.leased, member)
    redis.call("HDEL", K.meta, member)
    return
  end
  metas[#metas + 1] = member
  metas[#metas + 1] = formatMeta("dispatched", attempt, gen + 1, runAt, version)
  leases[#leases + 1] = math.max(runAt, now) + leaseMs
  leases[#leases + 1] = member
  countStats(member, body, status, "dispatched")
  out[#out + 1] = member
  out[#out + 1] = runAt
  out[#out + 1] = attempt
  out[#out + 1] = gen + 1
  out[#out + 1] = redelivered
end

local expired = redis.call("ZRANGEBYSCORE", K.leased, "-inf", now, "LIMIT", 0, limit)
for _, member in ipairs(expired) do
  local status, attempt, gen, runAt, version = readMeta(K.meta, member, now)
  claim(member, status, attempt, gen, runAt, version, 1)
end

local room = limit - #expired
if room > 0 then
  local due = redis.call("ZRANGEBYSCORE", K.due, "-inf", dueUntil, "WITHSCORES", "LIMIT", 0, room)
  for i = 1, #due, 2 do
    local member, runAt = due[i], tonumber(due[i + 1])
    local status, attempt, gen, _, version = readMeta(K.meta, member, runAt)
    fromDue[#fromDue + 1] = member
    claim(member, status, attempt, gen, runAt, version, 0)
  end
end

if #fromDue > 0 then
  callInSlices("ZREM", K.due, fromDue)
end
if #metas > 0 then
  callInSlices("HSET", K.meta, metas)
end
if #leases > 0 then
  callInSlices("ZADD", K.leased, leases)
end
flushStats(K.stats)
local reply = {CODE.OK, #quarantined}
for _, member in ipairs(quarantined) do
  reply[#reply + 1] = member
end
for _, field in ipairs(out) do
  reply[#reply + 1] = field
end
return reply
