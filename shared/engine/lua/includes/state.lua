-- Shared helpers, inlined into each script by the loader where it says `-- @include state`.
--
-- Event state lives in two per-shard hashes: `body` (immutable: "type\n{json}") and `meta`
-- (mutable: "status|attempt|gen|runAt"). A scheduled event that was never claimed has no meta
-- at all, which keeps the memory of a pending event to one sorted-set entry and one body field.

local function readMeta(metaKey, member, defaultRunAt)
  local raw = redis.call("HGET", metaKey, member)
  if not raw then
    return "scheduled", 0, 0, defaultRunAt
  end
  local status, attempt, gen, runAt = string.match(raw, "^(%a+)|(%d+)|(%d+)|(%d+)$")
  return status, tonumber(attempt), tonumber(gen), tonumber(runAt)
end

local function formatMeta(status, attempt, gen, runAt)
  return status .. "|" .. string.format("%d", attempt) .. "|" .. string.format("%d", gen) .. "|" ..
    string.format("%d", runAt)
end

local function writeMeta(metaKey, member, status, attempt, gen, runAt)
  redis.call("HSET", metaKey, member, formatMeta(status, attempt, gen, runAt))
end

-- Moves one event between status counters. `from` or `to` may be false for creation or removal.
local function bumpStats(statsKey, member, body, from, to)
  local tenant = string.match(member, "^([^/]*)/")
  local eventType = string.match(body, "^([^\n]*)")
  local base = tenant .. "|" .. eventType .. "|"
  if from then
    redis.call("HINCRBY", statsKey, base .. from, -1)
  end
  if to then
    redis.call("HINCRBY", statsKey, base .. to, 1)
  end
end

-- For scripts that move many events at once: count moves in a table, then write each counter
-- once with flushStats, instead of two HINCRBY per event.
local statsDelta = {}

local function countStats(member, body, from, to)
  local tenant = string.match(member, "^([^/]*)/")
  local eventType = string.match(body, "^([^\n]*)")
  local base = tenant .. "|" .. eventType .. "|"
  if from then
    statsDelta[base .. from] = (statsDelta[base .. from] or 0) - 1
  end
  if to then
    statsDelta[base .. to] = (statsDelta[base .. to] or 0) + 1
  end
end

local function flushStats(statsKey)
  for field, delta in pairs(statsDelta) do
    if delta ~= 0 then
      redis.call("HINCRBY", statsKey, field, delta)
    end
  end
  statsDelta = {}
end

-- Runs a variadic command over a long list of arguments in slices, since Lua's unpack is bounded.
local function callInSlices(command, key, args)
  local slice = 1000
  for i = 1, #args, slice do
    redis.call(command, key, unpack(args, i, math.min(i + slice - 1, #args)))
  end
end
