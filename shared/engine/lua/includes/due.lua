-- The shard's waiting events per tenant, for fair claims (docs/flow-control.md, "Fairness between
-- tenants"). Inlined by state.lua; every write to `due` goes through these functions.
--
-- `due` (member → runAt) stays the shard's one list of waiting events: stats, inspect, the loader
-- and the rebuild read it, and it is the judge of what is due. Beside it, each tenant has a window
-- `{tag}:tdue:<tenant>` (id → runAt, the member without its "tenant/") of at most WINDOW of its
-- waiting events, its earliest as far as they came in order, and `tenants` (tenant → the earliest
-- runAt in its window) names the tenants with a window, so claim.lua takes turns across tenants
-- without reading past another's backlog. A window that small stays a listpack, a few dozen bytes
-- an entry, so the per-tenant index costs next to nothing beside `due` (a full copy would cost
-- ~140 bytes an event). A tenant with no more than WINDOW waiting events has them all in its
-- window; a larger one has the rest in `due` only, from where claims take them in due order once
-- the windows are served, and claim.lua moves the head of `due` into the windows as it goes.
--
-- Invariants: every window entry is in `due` at the same runAt; a window never holds more than
-- WINDOW; `tenants` scores each tenant by its window's earliest. Scripts that use these must
-- declare K.due and K.tenants.
local WINDOW = 128

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

-- Sets a tenant's score in `tenants` to its earliest waiting event, or takes it out when it has none.
local function dueRefresh(tenant)
  local first = redis.call("ZRANGE", tenantDueKey(tenant), 0, 0, "WITHSCORES")
  if first[2] then
    redis.call("ZADD", K.tenants, first[2], tenant)
  else
    redis.call("ZREM", K.tenants, tenant)
  end
end

-- Puts a tenant's waiting events (`list`: runAt1, id1, ...) into its window: each goes in when it
-- is there already (a move) or the window has room, else only ahead of the window's latest, which
-- then leaves the window (`due` keeps it). Returns true when the window changed. `fresh`: the ids
-- are new to the index (schedule.lua checked), so none can be a move and the lookup is skipped; a
-- leftover window entry under such an id is put right by the claims' drift repair, as any other.
local function windowAdd(tenant, list, fresh)
  local key = tenantDueKey(tenant)
  local size = redis.call("ZCARD", key)
  local changed = false
  -- The window's latest entry, read once while the window stays full and unchanged: a batch of
  -- events due after the window's latest costs one read, not one a event.
  local lastId, lastScore
  for i = 1, #list, 2 do
    local runAt, id = list[i], list[i + 1]
    if size < WINDOW then
      size = size + redis.call("ZADD", key, runAt, id)
      changed = true
      lastId = nil
    elseif not fresh and redis.call("ZSCORE", key, id) then
      redis.call("ZADD", key, runAt, id)
      changed = true
      lastId = nil
    else
      if not lastId then
        local last = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
        lastId, lastScore = last[1], tonumber(last[2])
      end
      if lastId and tonumber(runAt) < lastScore then
        -- Out first, then in, so the window never grows past WINDOW (and stays a listpack).
        redis.call("ZREM", key, lastId)
        size = size - 1 + redis.call("ZADD", key, runAt, id)
        changed = true
        lastId = nil
      end
    end
  end
  return changed
end

-- Runs `command` (ZADD or ZREM) on `due` over a flat list whose every `step` values end with a
-- member, and returns the same list split by tenant, each member's id in its place, for the caller
-- to bring the windows in line: ({ runAt1, member1, ... }, 2) gives each tenant { runAt1, id1, ... },
-- and (members, 1) each tenant its ids.
local function dueWrite(command, list, step)
  local groups = {}
  if #list == 0 then
    return groups
  end
  callInSlices(command, K.due, list)
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

-- Adds or moves waiting events: `entries` is ZADD's flat list, runAt1, member1, runAt2, member2, ...
-- `fresh`: every member is new to the index (see windowAdd).
local function dueAddMany(entries, fresh)
  for tenant, group in pairs(dueWrite("ZADD", entries, 2)) do
    if windowAdd(tenant, group, fresh) then
      dueRefresh(tenant)
    end
  end
end

-- Takes members out of `due` and out of their tenants' zsets (members not there are ignored).
local function dueRemMany(members)
  for tenant, group in pairs(dueWrite("ZREM", members, 1)) do
    callInSlices("ZREM", tenantDueKey(tenant), group)
    dueRefresh(tenant)
  end
end

local function dueAdd(member, runAt)
  dueAddMany({ runAt, member })
end

local function dueRem(member)
  dueRemMany({ member })
end
