-- The shard's waiting events per tenant, for fair claims (docs/flow-control.md, "Fairness between
-- tenants"). Inlined by state.lua; every write to `due` goes through these functions.
--
-- `due` (member → runAt) stays the shard's one list of waiting events: stats, inspect, the loader
-- and the rebuild read it, and it is the judge of what is due. Beside it, `tenants` (tenant → its
-- earliest runAt) names the tenants with waiting events, and each tenant's own zset
-- `{tag}:tdue:<tenant>` (id → runAt, the member without its "tenant/") holds the same entries, so
-- claim.lua can take a few of each tenant's earliest without reading past another's backlog.
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

-- Sets a tenant's score in `tenants` to its earliest waiting event, or takes it out when it has none.
local function dueRefresh(tenant)
  local first = redis.call("ZRANGE", tenantDueKey(tenant), 0, 0, "WITHSCORES")
  if first[2] then
    redis.call("ZADD", K.tenants, first[2], tenant)
  else
    redis.call("ZREM", K.tenants, tenant)
  end
end

-- Adds or moves waiting events: `entries` is ZADD's flat list, runAt1, member1, runAt2, member2, ...
local function dueAddMany(entries)
  if #entries == 0 then
    return
  end
  callInSlices("ZADD", K.due, entries)
  local groups = {}
  for i = 1, #entries, 2 do
    local tenant, id = splitMember(entries[i + 1])
    local group = groups[tenant]
    if not group then
      group = {}
      groups[tenant] = group
    end
    group[#group + 1] = entries[i]
    group[#group + 1] = id
  end
  for tenant, group in pairs(groups) do
    callInSlices("ZADD", tenantDueKey(tenant), group)
    dueRefresh(tenant)
  end
end

-- Takes members out of `due` and out of their tenants' zsets (members not there are ignored).
local function dueRemMany(members)
  if #members == 0 then
    return
  end
  callInSlices("ZREM", K.due, members)
  local groups = {}
  for _, member in ipairs(members) do
    local tenant, id = splitMember(member)
    local group = groups[tenant]
    if not group then
      group = {}
      groups[tenant] = group
    end
    group[#group + 1] = id
  end
  for tenant, group in pairs(groups) do
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
