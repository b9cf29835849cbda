--[[
  Claims up to `limit` events of one shard for dispatch: first leases that expired (a send or a
  worker that never finished), then events due before `dueUntil`. Each claimed event is moved to
  `leased` with a new deadline and a new gen; nothing is deleted, so a crash after this script
  means a redelivery when the lease runs out, never a loss.

  Due events are taken in turns across tenants (docs/flow-control.md, "Fairness between tenants"):
  from each tenant whose earliest event is due, an equal share of the room, in passes until the
  batch is full, through the per-tenant windows kept beside `due` (includes/due.lua), then the
  rest of the room in due order; the batch interleaves the tenants. A tenant with 100 due events
  gets them all into the first batch beside one with 100,000. O(T log N + M) for T tenants with
  due events and M events taken.

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
local chosen = {}
-- Entries at the head of `due` checked against the per-tenant index in each claim.
local HEAL = 16
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
  chosen[member] = true
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

-- Due events, in turns across tenants (docs/flow-control.md, "Fairness between tenants"). `due`
-- is the judge of what is due and when; the per-tenant index (includes/due.lua) gives the turns.
-- Takes up to `n` events due in (lo, hi] ("-inf" for no lower bound).
local function takeRange(lo, hi, n)
  local stop = room - n
  -- 1. Passes over the tenants whose earliest event is due (earliest first): each pass gives every
  --    tenant still in the running an equal share of the room left, and a tenant that has fewer
  --    due leaves the running, so a tenant with 100 due gets all 100 beside one with 100,000 as
  --    long as the batch has room for 100 per tenant. Each pass costs O(T log N + its events).
  local order, turns, drift, read = {}, {}, {}, {}
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
      local key = tenantDueKey(tenant)
      local page = redis.call("ZRANGEBYSCORE", key, lo, hi, "WITHSCORES", "LIMIT", read[tenant] or 0, want)
      read[tenant] = (read[tenant] or 0) + #page / 2
      for i = 1, #page, 2 do
        local member = tenant .. "/" .. page[i]
        local score = redis.call("ZSCORE", K.due, member)
        if score and tonumber(score) == tonumber(page[i + 1]) then
          if not turns[tenant] then
            turns[tenant] = {}
            order[#order + 1] = tenant
          end
          local list = turns[tenant]
          list[#list + 1] = member
          list[#list + 1] = tonumber(score)
          picked = picked + 1
        else
          -- Not in `due` (any more), or at another time there: the tenant's index is put right below.
          drift[#drift + 1] = { tenant, page[i], score }
        end
      end
      if #page / 2 == want then
        still[#still + 1] = tenant
      end
    end
    active = still
  end
  -- The batch interleaves the tenants, one event of each in turn, so the queue does too.
  for i = 1, 2 * picked, 2 do
    for _, tenant in ipairs(order) do
      local list = turns[tenant]
      if list[i] then
        takeDue(list[i], list[i + 1])
      end
    end
  end
  for _, fix in ipairs(drift) do
    if fix[3] then
      redis.call("ZADD", tenantDueKey(fix[1]), fix[3], fix[2])
    else
      redis.call("ZREM", tenantDueKey(fix[1]), fix[2])
    end
    dueRefresh(fix[1])
  end
  -- 2. Room left means every windowed event of the range is taken: whatever `due` still has in
  --    it (a large tenant's events beyond its window) goes in due order, as before.
  if room > stop then
    local rest = redis.call("ZRANGEBYSCORE", K.due, lo, hi, "WITHSCORES", "LIMIT", 0, room - stop + #fromDue)
    for j = 1, #rest, 2 do
      if room <= stop then
        break
      end
      if not chosen[rest[j]] then
        takeDue(rest[j], tonumber(rest[j + 1]))
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
-- the heal and the turns below are skipped: a paced drain comes back every few milliseconds until
-- the workers finish what is handed out, and those calls cost Redis more than the claims that took
-- events did (docs/benchmarks.md, engine burst).
if room > 0 and budget > 0 then
  local edge = string.format("%d", now + leaseMs)
  local function anyDue(lo, hi)
    return #redis.call("ZRANGEBYSCORE", K.due, lo, hi, "LIMIT", 0, 1) > 0
  end
  local dueNow = anyDue("-inf", math.min(now, dueUntil))
  local dueAhead = dueUntil > now and anyDue(string.format("(%d", now), dueUntil)
  local nowOpen = dueNow and redis.call("ZCOUNT", K.leased, "-inf", edge) < budget
  local aheadOpen = dueAhead
    and redis.call("ZCOUNT", K.leased, "(" .. edge, string.format("(%d", PARKED)) < budget
  if not nowOpen and not aheadOpen then
    paced = dueNow or dueAhead
    room = 0
  end
end

if room > 0 then
  -- The head of `due` goes into the tenants' windows (includes/due.lua): the events of a tenant
  -- with more than a window's worth, and entries written before the windows existed or by hand
  -- (put right when a window holds them at another time), so they get their turns too.
  local healed = {}
  local head = redis.call("ZRANGEBYSCORE", K.due, "-inf", dueUntil, "WITHSCORES", "LIMIT", 0, HEAL)
  for i = 1, #head, 2 do
    local tenant, id = splitMember(head[i])
    local indexed = redis.call("ZSCORE", tenantDueKey(tenant), id)
    if (not indexed or tonumber(indexed) ~= tonumber(head[i + 1])) and windowAdd(tenant, { head[i + 1], id }) then
      healed[tenant] = true
    end
  end
  for tenant in pairs(healed) do
    dueRefresh(tenant)
  end

  local edge = now + leaseMs
  takeRange("-inf", math.min(now, dueUntil), budgetRoom("-inf", string.format("%d", edge), room))
  if dueUntil > now and room > 0 then
    takeRange(string.format("(%d", now), dueUntil, budgetRoom(string.format("(%d", edge), string.format("(%d", PARKED), room))
  end
end

dueRemMany(fromDue)
-- Paced only while the budget keeps due events waiting: the caller then comes back soon.
paced = paced and #redis.call("ZRANGEBYSCORE", K.due, "-inf", dueUntil, "LIMIT", 0, 1) > 0
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
