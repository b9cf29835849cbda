--[[
  Claims up to `limit` events of one shard for dispatch: first leases that expired (a send or a
  worker that never finished), then events due before `dueUntil`. Each claimed event is moved to
  `leased` with a new deadline and a new gen; nothing is deleted, so a crash after this script
  means a redelivery when the lease runs out, never a loss. O(log N + M).

  An entry whose meta cannot be read is moved to the quarantine (see `quarantine` in state.lua)
  instead of being claimed, so one bad entry never fails the shard's claims again.

  KEYS[1] due   KEYS[2] leased   KEYS[3] body   KEYS[4] meta   KEYS[5] stats   KEYS[6] epoch
  KEYS[7] quarantine
  ARGV[1] now (ms)   ARGV[2] dueUntil (ms)   ARGV[3] limit   ARGV[4] dispatch lease (ms)

  Returns:
    {9}                          EPOCH_MISSING: the shard's index may be incomplete; rebuild first
    {0, q, member1..member_q, member, runAt, attempt, gen, redelivered(0|1), ...}
                                 OK: q members quarantined by this call, then five fields per
                                 claimed event
]]
-- @include state

if redis.call("EXISTS", KEYS[6]) == 0 then
  return {9}
end

local k = {
  due = KEYS[1], leased = KEYS[2], body = KEYS[3], meta = KEYS[4], stats = KEYS[5], quarantine = KEYS[7],
}
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
    quarantine(k, member, "unreadable meta")
    quarantined[#quarantined + 1] = member
    return
  end
  local body = redis.call("HGET", KEYS[3], member)
  if not body then
    -- An orphan entry (its body is gone): drop it rather than dispatch something unrunnable.
    redis.call("ZREM", KEYS[1], member)
    redis.call("ZREM", KEYS[2], member)
    redis.call("HDEL", KEYS[4], member)
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

local expired = redis.call("ZRANGEBYSCORE", KEYS[2], "-inf", now, "LIMIT", 0, limit)
for _, member in ipairs(expired) do
  local status, attempt, gen, runAt, version = readMeta(KEYS[4], member, now)
  claim(member, status, attempt, gen, runAt, version, 1)
end

local room = limit - #expired
if room > 0 then
  local due = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", dueUntil, "WITHSCORES", "LIMIT", 0, room)
  for i = 1, #due, 2 do
    local member, runAt = due[i], tonumber(due[i + 1])
    local status, attempt, gen, _, version = readMeta(KEYS[4], member, runAt)
    fromDue[#fromDue + 1] = member
    claim(member, status, attempt, gen, runAt, version, 0)
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
local reply = {0, #quarantined}
for _, member in ipairs(quarantined) do
  reply[#reply + 1] = member
end
for _, field in ipairs(out) do
  reply[#reply + 1] = field
end
return reply
