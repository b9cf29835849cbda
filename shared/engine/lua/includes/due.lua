-- The shard's waiting events, one sorted set per tenant, for fair claims (docs/flow-control.md,
-- "Fairness between tenants"). Inlined by state.lua; every write of a waiting event goes through
-- these functions.
--
-- Each tenant's waiting events of the shard are in `{tag}:tdue:<tenant>` (id → runAt: the member
-- without its "tenant/"): the one record of what waits and when, so a claim takes any tenant's
-- earliest events in O(log N) however large another tenant's backlog, and a tenant's own reads
-- (stats, timeline) cost its own events only. `tenants` (tenant → its earliest runAt) lists the
-- tenants with waiting events, and `{tag}:duecount` counts the events in them that the legacy `due`
-- (below) does not also hold, so the shard's waiting events number `duecount` + ZCARD `due`, exact
-- after an upgrade too, when the old windows of 128 hold uncounted copies of legacy entries. Each
-- event is in exactly one tenant set, as it was in the one shard-wide `due` before, and a tenant
-- with at most 128 waiting events keeps a listpack.
--
-- `due` (member → runAt), the shard-wide set of before, is read as a legacy inbox: entries written
-- before this layout (or by hand) are still waiting, `dueScore` finds them, every write here takes
-- a member out of it, and claims move its due head into the tenants' sets (`dueAdopt`).
--
-- The other scripts' headers say "waiting in `due`" for waiting in either place.
--
-- Invariants: a member is in at most one tenant set; `tenants` scores each tenant by its set's
-- earliest and lists no tenant without one; `duecount` is the size of the sets less the legacy.
-- Scripts that use these must declare K.due and K.tenants.

local function splitMember(member)
  local slash = string.find(member, "/", 1, true)
  if not slash then
    return "", member
  end
  return string.sub(member, 1, slash - 1), string.sub(member, slash + 1)
end

local function tenantDueKey(tenant)
  return shardTag(K.due) .. ":tdue:" .. tenant
end

local function dueCountKey()
  return shardTag(K.due) .. ":duecount"
end

-- Sets a tenant's score in `tenants` to its earliest waiting event, or takes it out when it has none.
local function dueRefresh(tenant)
  local first = redis.call("ZRANGE", tenantDueKey(tenant), 0, 0, "WITHSCORES")
  if first[2] then
    redis.call("ZADD", K.tenants, first[2], tenant)
  else
    redis.call("ZREM", K.tenants, tenant)
  end
end

-- Whether the legacy `due` holds any entry.
local function legacyExists()
  return redis.call("EXISTS", K.due) == 1
end

-- A member's runAt in the legacy `due` (a string), or false.
local function legacyScore(member)
  return redis.call("ZSCORE", K.due, member) or false
end

-- A waiting event's runAt (a number), or false when it is not waiting. A legacy entry in `due`
-- (see above) wins over a copy in the tenant's set: an old window's copy has the same time unless
-- someone edited one by hand, and then the judge of before is what was meant.
local function dueScore(member)
  local legacy = legacyScore(member)
  if legacy then
    return tonumber(legacy)
  end
  local tenant, id = splitMember(member)
  local score = redis.call("ZSCORE", tenantDueKey(tenant), id)
  return score and tonumber(score) or false
end

-- Splits a flat list whose every `step` values end with a member by tenant, each member replaced by
-- its id: ({ runAt1, member1, ... }, 2) gives each tenant { runAt1, id1, ... }, (members, 1) its ids.
local function byTenant(list, step)
  local groups = {}
  for i = step, #list, step do
    local tenant, id = splitMember(list[i])
    local group = groups[tenant]
    if not group then
      group = {}
      groups[tenant] = group
    end
    for j = i - step + 1, i - 1 do
      group[#group + 1] = list[j]
    end
    group[#group + 1] = id
  end
  return groups
end

-- Takes members out of the legacy `due`, when it has any (one EXISTS otherwise), and returns the
-- set of those it held: `duecount` counted none of them, whether or not a tenant set held a copy.
local function legacyTake(members)
  local held = {}
  if #members > 0 and redis.call("EXISTS", K.due) == 1 then
    for _, member in ipairs(members) do
      if redis.call("ZREM", K.due, member) == 1 then
        held[member] = true
      end
    end
  end
  return held
end

-- Runs ZADD or ZREM on each tenant's set over `list` (ZADD's flat list, or members), in two
-- batches per tenant: the members the legacy `due` held (`legacy`) and the rest. Returns what the
-- second batches answered (their count change), how many the first held, and each tenant's last
-- batch (its only one when `legacy` is empty).
local function tenantWrite(command, list, step, legacy)
  local counted, fromLegacy, tenants = 0, 0, {}
  local split = { {}, {} }
  for i = step, #list, step do
    local part = legacy[list[i]] and split[1] or split[2]
    for j = i - step + 1, i do
      part[#part + 1] = list[j]
    end
  end
  for n, part in ipairs(split) do
    for tenant, group in pairs(byTenant(part, step)) do
      local changed = callInSlices(command, tenantDueKey(tenant), group)
      if n == 2 then
        counted = counted + changed
      end
      tenants[tenant] = group
    end
  end
  for _ in pairs(legacy) do
    fromLegacy = fromLegacy + 1
  end
  return counted, fromLegacy, tenants
end

-- Adds or moves waiting events: `entries` is ZADD's flat list, runAt1, member1, runAt2, member2, ...
-- `fresh`: every member is new to the index (schedule.lua checked), so none is a move: the tenant's
-- earliest can only come down (ZADD LT, no read) and the legacy `due` cannot hold them.
local function dueAddMany(entries, fresh)
  if #entries == 0 then
    return
  end
  local legacy = {}
  if not fresh then
    local members = {}
    for i = 2, #entries, 2 do
      members[#members + 1] = entries[i]
    end
    legacy = legacyTake(members)
  end
  local added, fromLegacy, tenants = tenantWrite("ZADD", entries, 2, legacy)
  for tenant, group in pairs(tenants) do
    if fresh then
      local earliest = group[1]
      for i = 3, #group, 2 do
        if tonumber(group[i]) < tonumber(earliest) then
          earliest = group[i]
        end
      end
      redis.call("ZADD", K.tenants, "LT", earliest, tenant)
    else
      dueRefresh(tenant)
    end
  end
  if added + fromLegacy > 0 then
    redis.call("INCRBY", dueCountKey(), added + fromLegacy)
  end
end

-- Takes members out of the waiting events (members not there are ignored).
local function dueRemMany(members)
  if #members == 0 then
    return
  end
  local removed, _, tenants = tenantWrite("ZREM", members, 1, legacyTake(members))
  for tenant in pairs(tenants) do
    dueRefresh(tenant)
  end
  if removed > 0 then
    redis.call("DECRBY", dueCountKey(), removed)
  end
end

local function dueAdd(member, runAt)
  dueAddMany({ runAt, member })
end

local function dueRem(member)
  dueRemMany({ member })
end

-- Moves up to `n` legacy `due` entries due by `hi` into their tenants' sets (claim.lua, before its
-- turns), so an index written before this layout drains in turns like any other.
local function dueAdopt(hi, n)
  if redis.call("EXISTS", K.due) == 0 then
    return
  end
  local head = redis.call("ZRANGEBYSCORE", K.due, "-inf", hi, "WITHSCORES", "LIMIT", 0, n)
  local entries = {}
  for i = 1, #head, 2 do
    entries[#entries + 1] = head[i + 1]
    entries[#entries + 1] = head[i]
  end
  dueAddMany(entries)
end

-- True when a tenant's earliest waiting event, or a legacy entry, has its runAt in [lo, hi]
-- (ZRANGEBYSCORE bounds). Exact when lo is "-inf"; beyond that a tenant whose earliest is before lo
-- may have events in the range too, which the caller allows for.
local function anyWaiting(lo, hi)
  return #redis.call("ZRANGEBYSCORE", K.tenants, lo, hi, "LIMIT", 0, 1) > 0
    or #redis.call("ZRANGEBYSCORE", K.due, lo, hi, "LIMIT", 0, 1) > 0
end
