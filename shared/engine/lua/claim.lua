--[[
  Claims up to `limit` events of one shard for dispatch: first leases that expired (a send or a
  worker that never finished), then events due before `dueUntil`. Each claimed event is moved to
  `leased` with a new deadline and a new gen; nothing is deleted, so a crash after this script
  means a redelivery when the lease runs out, never a loss.

  Due events are taken in turns across tenants (docs/flow-control.md, "Fairness between tenants"),
  from the tenants' own sets of waiting events (includes/due.lua). The rule: the room left after
  expired leases and released held-back events is shared max-min fairly among the tenants with an
  event due, the earliest first when there are more of them than room: each gets an equal share,
  a tenant with fewer due events gets them all and leaves the rest to the others, and the last
  events of the room that do not divide evenly go one each to the tenants due earliest. So in
  every claim each tenant gets min(its due events, about room / tenants), whatever the size of the
  others' backlogs, until it runs out. The batch interleaves the tenants. O(T log N + M) for T
  tenants with due events (at most the room) and M events taken.

  An entry whose meta cannot be read is moved to the quarantine (see `quarantine` in state.lua)
  instead of being claimed, so one bad entry never fails the shard's claims again.

  Flow control (docs/flow-control.md): the caller lists the groups (`tenant|type`) that may take
  only so many events now, each with its allowance and the reason to give the rest. Events of a
  listed group beyond its allowance, or behind events of the group already held back, are parked
  (see `park` in state.lua) instead of claimed: they leave `due`, so they never block another
  group, and they stay in the index. Parked events are released first, in due order, as far as
  their group's allowance goes; a group no longer listed has no limit left and is released in full.

  KEYS  K.due  K.tenants  K.leased  K.body  K.meta  K.stats  K.epoch  K.quarantine   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] dueUntil (ms)   ARGV[3] limit   ARGV[4] dispatch lease (ms)
  ARGV[5] pacing budget: events handed out and unfinished per window (see budgetRoom); 0 for none
  ARGV[6] g, the number of listed groups, then g triples: group, allowance, reason
          ("paused"|"rate"|"concurrency")

  Returns:
    {9}                          EPOCH_MISSING: the shard's index may be incomplete; rebuild first
    {0, q, p, paced, t, group1, taken1, .., group_t, taken_t, member1..member_q,
     member, runAt, attempt, gen, redelivered(0|1), ...}
                                 OK: q members quarantined and p events parked by this call,
                                 paced 1 when the budget left due events waiting, t listed groups
                                 with how many events each took, then five fields per claimed event
]]
-- @include state

if redis.call("EXISTS", K.epoch) == 0 then
  return {CODE.EPOCH_MISSING}
end

local now = tonumber(ARGV[1])
local dueUntil = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local leaseMs = tonumber(ARGV[4])
local budget = tonumber(ARGV[5]) or 0
local paced = false
local out = {}
local quarantined = {}
local fromDue = {}
-- Legacy `due` entries (includes/due.lua) moved into the tenants' sets by one claim, at most.
local ADOPT = 1000
local tag = shardTag(K.due)
local allow, why, taken = {}, {}, {}
local parked = 0
for i = 7, 6 + 3 * tonumber(ARGV[6] or "0"), 3 do
  allow[ARGV[i]] = tonumber(ARGV[i + 1])
  why[ARGV[i]] = ARGV[i + 2]
end
-- Any group listed: only then does a due event's group decide anything.
local limited = next(allow) ~= nil

local function take(group)
  if allow[group] then
    allow[group] = allow[group] - 1
    taken[group] = (taken[group] or 0) + 1
  end
end

-- `body`: the caller's read of it, when it made one (false: read here).
local function claim(member, status, attempt, gen, runAt, version, redelivered, body)
  if not status then
    quarantine(K, member, "unreadable meta")
    quarantined[#quarantined + 1] = member
    return
  end
  body = body or redis.call("HGET", K.body, member)
  if not body then
    -- An orphan entry (its body is gone): drop it rather than dispatch something unrunnable.
    dueRem(member)
    redis.call("ZREM", K.leased, member)
    redis.call("HDEL", K.meta, member)
    return
  end
  queueMeta(member, "dispatched", attempt, gen + 1, runAt, version)
  queueLease(member, math.max(runAt, now) + leaseMs)
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
      claim(member, status, attempt, gen, runAt, version, 0, body)
      take(group)
      room = room - 1
    end
    if redis.call("EXISTS", tag .. ":held:" .. group) == 0 then
      redis.call("SREM", tag .. ":heldgroups", group)
    end
  end
end

-- A due event, parked or claimed; either way it leaves `due` at the end and takes a place.
local function takeDue(member, runAt)
  local status, attempt, gen, _, version = readMeta(K.meta, member, runAt)
  fromDue[#fromDue + 1] = member
  room = room - 1
  -- The body names the event's group, and only listed groups can be held back.
  local body = status and limited and redis.call("HGET", K.body, member)
  local group = body and groupOf(member, body)
  local left = group and allow[group]
  if left and (left <= 0 or redis.call("EXISTS", tag .. ":held:" .. group) == 1) then
    -- Held back: behind its group's allowance, or behind events of its group already waiting.
    local waiting = park(tag, K.leased, K.meta, member, body, attempt, gen, runAt, version, why[group])
    countStats(member, body, status, waiting)
    parked = parked + 1
  else
    claim(member, status, attempt, gen, runAt, version, 0, body)
    if group then
      take(group)
    end
  end
end

-- Whether the legacy `due` still holds entries after this claim's adoption (includes/due.lua).
local legacy = false

-- Due events in turns across tenants (see the header): up to `n` events due in (lo, hi] ("-inf"
-- for no lower bound), from the tenants' own sets, whose scores are the judge of what is due.
local function takeRange(lo, hi, n)
  -- Passes over the tenants whose earliest event is due (earliest first): each pass gives every
  -- tenant still in the running an equal share of what is left, and a tenant that has fewer due
  -- leaves the running. Each pass costs O(T log N + its events); a pass either fills the room or
  -- drops a tenant, so there are at most T + 1 of them.
  local order, turns, read, moved = {}, {}, {}, {}
  local picked = 0
  local active = redis.call("ZRANGEBYSCORE", K.tenants, "-inf", hi, "LIMIT", 0, n)
  while picked < n and #active > 0 do
    local share = math.max(1, math.floor((n - picked) / #active))
    local still = {}
    for _, tenant in ipairs(active) do
      local want = math.min(share, n - picked)
      if want <= 0 then
        break
      end
      local page = redis.call("ZRANGEBYSCORE", tenantDueKey(tenant), lo, hi, "WITHSCORES", "LIMIT", read[tenant] or 0, want)
      if #page == 0 and not read[tenant] and lo == "-inf" then
        -- Listed as due with nothing due: its score in `tenants` is stale (a hand edit); put it right.
        dueRefresh(tenant)
      end
      read[tenant] = (read[tenant] or 0) + #page / 2
      if #page > 0 and not turns[tenant] then
        turns[tenant] = {}
        order[#order + 1] = tenant
      end
      local list = turns[tenant]
      for i = 1, #page, 2 do
        local member = tenant .. "/" .. page[i]
        local runAt = tonumber(page[i + 1])
        local other = legacy and legacyScore(member)
        if other then
          -- A legacy entry of the same event (an old window's copy, or a hand edit) wins
          -- (includes/due.lua): moved into the tenant's set below, and taken if due by its time.
          moved[#moved + 1] = other
          moved[#moved + 1] = member
          runAt = tonumber(other)
          if runAt > hi or (lo ~= "-inf" and runAt <= now) then
            runAt = nil
          end
        end
        if runAt then
          list[#list + 1] = member
          list[#list + 1] = runAt
          picked = picked + 1
        end
      end
      if #page / 2 == want then
        still[#still + 1] = tenant
      end
    end
    active = still
  end
  dueAddMany(moved)
  -- The batch interleaves the tenants, one event of each in turn, so the queue does too.
  for i = 1, 2 * picked, 2 do
    for _, tenant in ipairs(order) do
      local list = turns[tenant]
      if list[i] then
        takeDue(list[i], list[i + 1])
      end
    end
  end
end

-- Pacing: with a budget, at most that many events of the shard are handed out and unfinished at
-- once in each of two windows of lease deadlines: due now (claimed when due, or ahead and due since;
-- with the running ones), and claimed ahead of their time. So a backlog waits here, where claims
-- take turns across tenants, rather than in the queue, where a later tenant's events would queue
-- behind it; and events claimed ahead never hold back those due now. Returns the room for a window.
local function budgetRoom(lo, hi, want)
  if budget <= 0 or want <= 0 then
    return want
  end
  local free = math.max(0, budget - redis.call("ZCOUNT", K.leased, lo, hi))
  if free < want then
    paced = true
    return free
  end
  return want
end

-- Nothing can be claimed when neither window can take an event: the window of events due now has
-- none due or is full, and so has the window of events claimed ahead (or it is not in use). Then
-- the adoption and the turns below are skipped: a paced drain comes back every few milliseconds until
-- the workers finish what is handed out, and those calls cost Redis more than the claims that took
-- events did (docs/benchmarks.md, engine burst).
if room > 0 and budget > 0 then
  local edge = string.format("%d", now + leaseMs)
  local dueNow = anyWaiting("-inf", math.min(now, dueUntil))
  -- A tenant with an event due now may have some due ahead too: then look.
  local dueAhead = dueUntil > now and (dueNow or anyWaiting(string.format("(%d", now), dueUntil))
  local nowOpen = dueNow and redis.call("ZCOUNT", K.leased, "-inf", edge) < budget
  local aheadOpen = dueAhead
    and redis.call("ZCOUNT", K.leased, "(" .. edge, string.format("(%d", PARKED)) < budget
  if not nowOpen and not aheadOpen then
    paced = dueNow or dueAhead
    room = 0
  end
end

if room > 0 then
  dueAdopt(dueUntil, ADOPT)
  legacy = legacyExists()
  local edge = now + leaseMs
  takeRange("-inf", math.min(now, dueUntil), budgetRoom("-inf", string.format("%d", edge), room))
  if dueUntil > now and room > 0 then
    takeRange(string.format("(%d", now), dueUntil, budgetRoom(string.format("(%d", edge), string.format("(%d", PARKED), room))
  end
end

dueRemMany(fromDue)
-- Paced only while the budget keeps due events waiting: the caller then comes back soon.
paced = paced and anyWaiting("-inf", dueUntil)
flushWrites()
local reply = {CODE.OK, #quarantined, parked, paced and 1 or 0, 0}
for group, n in pairs(taken) do
  reply[#reply + 1] = group
  reply[#reply + 1] = n
  reply[5] = reply[5] + 1
end
for _, member in ipairs(quarantined) do
  reply[#reply + 1] = member
end
for _, field in ipairs(out) do
  reply[#reply + 1] = field
end
return reply
