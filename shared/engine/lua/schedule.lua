--[[
  Indexes new events in one shard. An event due before `dispatchUntil` is claimed on the spot
  (leased, gen 1), so the caller can send it to the queue without waiting for the next tick. An
  event due beyond the near horizon (ARGV[4], see includes/horizon.lua) is left to the journal:
  nothing is written for it, and the dispatcher's loader promotes it ahead of time.

  A member with a cancel tombstone is not indexed (TOMBSTONED): a cancel that reached the index
  while this create was between its journal write and this script has answered, or will answer,
  "cancelled" once the journal agrees, and the event must never start (invariant 4). If that cancel
  instead finds no journal item (it answers 404 and drops its tombstone), the event is pending in
  the journal only, and the recovery sweep indexes it.

  KEYS  K.due  K.tenants  K.leased  K.body  K.meta  K.stats  K.cancelled   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] dispatchUntil (ms)   ARGV[3] dispatch lease (ms)
  ARGV[4] near horizon + margin (ms), or "" to index every event
  ARGV[5] pacing budget (see budgetRoom in claim.lua), 0 for none: an event due within the
          look-ahead is claimed on the spot only while the shard has fewer than that many handed
          out and unfinished in its window; beyond it, it waits in `due` for a claim, which takes
          turns across tenants, so a flood of creates does not fill the queue ahead of other tenants
  ARGV[6..] triples: member, runAt (ms), body

  Returns one code per event, in order:
    1 SCHEDULED   waiting in `due`
    2 DISPATCHED  leased with gen 1; the caller must send it
    3 EXISTS      already indexed (idempotent repeat); nothing changed
    12 TOMBSTONED a cancel got there first; not indexed
    13 FAR        due beyond the near horizon; not indexed (the journal holds it)
]]
-- @include state
-- @include horizon

local now = tonumber(ARGV[1])
local dispatchUntil = tonumber(ARGV[2])
local leaseMs = tonumber(ARGV[3])
local limit = nearLimit(now, ARGV[4])
local budget = tonumber(ARGV[5]) or 0
local edge = string.format("%d", now + leaseMs)
-- Room left under the budget in the two windows of lease deadlines (due now; claimed ahead).
local free = {}
if budget > 0 then
  free.now = budget - redis.call("ZCOUNT", K.leased, "-inf", edge)
  free.ahead = budget - redis.call("ZCOUNT", K.leased, "(" .. edge, string.format("(%d", PARKED))
end
local function mayDispatch(runAt)
  if budget <= 0 then
    return true
  end
  local window = runAt <= now and "now" or "ahead"
  if free[window] <= 0 then
    return false
  end
  free[window] = free[window] - 1
  return true
end
local codes = {}
local due = {}

for i = 6, #ARGV, 3 do
  local member, runAt, body = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  if redis.call("HEXISTS", K.body, member) == 1 then
    -- Checked before the horizon: a leftover under a reused id is reported, far or near.
    codes[#codes + 1] = CODE.EXISTS
  elseif redis.call("ZSCORE", K.cancelled, member) then
    codes[#codes + 1] = CODE.TOMBSTONED
  elseif limit and runAt > limit then
    codes[#codes + 1] = CODE.FAR
  elseif runAt <= dispatchUntil and mayDispatch(runAt) then
    redis.call("HSET", K.body, member, body)
    writeMeta(K.meta, member, "dispatched", 0, 1, runAt)
    queueLease(member, math.max(runAt, now) + leaseMs)
    countStats(member, body, false, "dispatched")
    codes[#codes + 1] = CODE.DISPATCHED
  else
    redis.call("HSET", K.body, member, body)
    due[#due + 1] = runAt
    due[#due + 1] = member
    countStats(member, body, false, "scheduled")
    codes[#codes + 1] = CODE.SCHEDULED
  end
end

-- Fresh: each was checked absent from the bodies above, so none is waiting (includes/due.lua).
dueAddMany(due, true)
flushWrites()
return codes
