--[[
  Claims up to `limit` events of one shard for dispatch: first leases that expired (a send or a
  worker that never finished), then events due before `dueUntil`. Each claimed event is moved to
  `leased` with a new deadline and a new gen; nothing is deleted, so a crash after this script
  means a redelivery when the lease runs out, never a loss. O(log N + M).

  An entry whose meta cannot be read is moved to the quarantine (see `quarantine` in state.lua)
  instead of being claimed, so one bad entry never fails the shard's claims again.

  Flow control (docs/flow-control.md): the caller lists the groups (`tenant|type`) that may take
  only so many events now, each with its allowance and the reason to give the rest. Events of a
  listed group beyond its allowance, or behind events of the group already held back, are parked
  (see `park` in state.lua) instead of claimed: they leave `due`, so they never block another
  group, and they stay in the index. Parked events are released first, in due order, as far as
  their group's allowance goes; a group no longer listed has no limit left and is released in full.

  KEYS  K.due  K.leased  K.body  K.meta  K.stats  K.epoch  K.quarantine   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] dueUntil (ms)   ARGV[3] limit   ARGV[4] dispatch lease (ms)
  ARGV[5] g, the number of listed groups, then g triples: group, allowance, reason
          ("paused"|"rate"|"concurrency")

  Returns:
    {9}                          EPOCH_MISSING: the shard's index may be incomplete; rebuild first
    {0, q, p, t, group1, taken1, .., group_t, taken_t, member1..member_q,
     member, runAt, attempt, gen, redelivered(0|1), ...}
                                 OK: q members quarantined and p events parked by this call, t
                                 listed groups with how many events each took, then five fields
                                 per claimed event
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
local tag = shardTag(K.due)
local allow, why, taken = {}, {}, {}
local parked = 0
for i = 6, 5 + 3 * tonumber(ARGV[5] or "0"), 3 do
  allow[ARGV[i]] = tonumber(ARGV[i + 1])
  why[ARGV[i]] = ARGV[i + 2]
end

local function take(group)
  if allow[group] then
    allow[group] = allow[group] - 1
    taken[group] = (taken[group] or 0) + 1
  end
end

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
-- Held-back events first, oldest first, as far as each group's allowance and the room go.
for _, group in ipairs(redis.call("SMEMBERS", tag .. ":heldgroups")) do
  if room <= 0 then
    break
  end
  local n = math.min(allow[group] or room, room)
  if n > 0 then
    for _, member in ipairs(redis.call("ZRANGEBYSCORE", tag .. ":held:" .. group, "-inf", dueUntil, "LIMIT", 0, n)) do
      local body = redis.call("HGET", K.body, member)
      redis.call("ZREM", tag .. ":held:" .. group, member)
      unpark(tag, member, body)
      local status, attempt, gen, runAt, version = readMeta(K.meta, member, 0)
      claim(member, status, attempt, gen, runAt, version, 0)
      take(group)
      room = room - 1
    end
    if redis.call("EXISTS", tag .. ":held:" .. group) == 0 then
      redis.call("SREM", tag .. ":heldgroups", group)
    end
  end
end

if room > 0 then
  local due = redis.call("ZRANGEBYSCORE", K.due, "-inf", dueUntil, "WITHSCORES", "LIMIT", 0, room)
  for i = 1, #due, 2 do
    local member, runAt = due[i], tonumber(due[i + 1])
    local status, attempt, gen, _, version = readMeta(K.meta, member, runAt)
    fromDue[#fromDue + 1] = member
    local body = status and redis.call("HGET", K.body, member)
    local group = body and groupOf(member, body)
    local left = group and allow[group]
    if left and (left <= 0 or redis.call("EXISTS", tag .. ":held:" .. group) == 1) then
      -- Held back: behind its group's allowance, or behind events of its group already waiting.
      local waiting = park(tag, K.leased, K.meta, member, body, attempt, gen, runAt, version, why[group])
      countStats(member, body, status, waiting)
      parked = parked + 1
    else
      claim(member, status, attempt, gen, runAt, version, 0)
      if group then
        take(group)
      end
    end
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
local reply = {CODE.OK, #quarantined, parked, 0}
for group, n in pairs(taken) do
  reply[#reply + 1] = group
  reply[#reply + 1] = n
  reply[4] = reply[4] + 1
end
for _, member in ipairs(quarantined) do
  reply[#reply + 1] = member
end
for _, field in ipairs(out) do
  reply[#reply + 1] = field
end
return reply
