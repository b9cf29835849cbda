-- Shared helpers, inlined into each script by the loader where it says `-- @include state`.
--
-- Event state lives in two per-shard hashes: `body` (immutable: "type\n{json}") and `meta`
-- (mutable: "status|attempt|gen|runAt|version", the version optional). A scheduled event that was never claimed has no meta
-- at all, which keeps the memory of a pending event to one sorted-set entry and one body field.

-- The shard's key prefix (its hash tag), from any of its keys: everything before the last ":".
local function shardTag(key)
  return string.match(key, "^(.*):[^:]*$")
end

-- @include slices

-- @include due

local KNOWN_STATUS = { scheduled = true, dispatched = true, running = true, retrying = true, dead = true }

-- Returns status, attempt, gen, runAt, version. Times may be negative (an index written before
-- runAt was bounded holds some). The version (the journal's, see reschedule.lua) is optional: meta
-- written without it reads as version 0. When the stored value cannot be read, status is false:
-- the caller must not act on it (claim and start move it to the quarantine).
local function readMeta(metaKey, member, defaultRunAt)
  local raw = redis.call("HGET", metaKey, member)
  if not raw then
    return "scheduled", 0, 0, defaultRunAt, 0
  end
  local status, attempt, gen, runAt, version =
    string.match(raw, "^(%a+)|(%-?%d+)|(%-?%d+)|(%-?%d+)|(%d+)$")
  if not status then
    status, attempt, gen, runAt = string.match(raw, "^(%a+)|(%-?%d+)|(%-?%d+)|(%-?%d+)$")
    version = "0"
  end
  attempt, gen, runAt, version = tonumber(attempt), tonumber(gen), tonumber(runAt), tonumber(version)
  if not status or not KNOWN_STATUS[status] or not attempt or not gen or not runAt or not version then
    return false, 0, 0, 0, 0
  end
  return status, attempt, gen, runAt, version
end

-- Looks up the one event a script acts on. Returns false, then its body and meta (status, attempt,
-- gen, runAt, version); or the reply that refuses it: {NOT_FOUND} when it is not indexed, and
-- {unreadable, "unreadable"} when its meta cannot be read (the next claim quarantines it).
local function lookup(member, unreadable)
  local body = redis.call("HGET", K.body, member)
  if not body then
    return {CODE.NOT_FOUND}
  end
  local status, attempt, gen, runAt, version = readMeta(K.meta, member, 0)
  if not status then
    return {unreadable, "unreadable"}
  end
  return false, body, status, attempt, gen, runAt, version
end

local function formatMeta(status, attempt, gen, runAt, version)
  local text = status .. "|" .. string.format("%d", attempt) .. "|" .. string.format("%d", gen) .. "|" ..
    string.format("%d", runAt)
  if version and version > 0 then
    text = text .. "|" .. string.format("%d", version)
  end
  return text
end

local function writeMeta(metaKey, member, status, attempt, gen, runAt, version)
  redis.call("HSET", metaKey, member, formatMeta(status, attempt, gen, runAt, version))
end

-- Parking (flow control, see docs/flow-control.md). An event held back by its type's limits
-- (paused, out of rate tokens, no concurrency slot) or its tenant's cap leaves `due` so it never
-- blocks the head of the shard for anyone else, yet stays in the index: it waits in `leased` at
-- PARKED (a score no lease deadline reaches, so no expiry sweep redelivers it) with its waiting
-- status (scheduled|retrying) and runAt in its meta, and in its group's `held:<tenant>|<type>`
-- zset by runAt, from which claim.lua releases it in due order. cancel, reschedule, forget and
-- quarantine unpark it. Every held-back key lives under the shard's own hash tag.
local PARKED = 8e15

local function groupOf(member, body)
  return (string.match(member, "^([^/]*)/") or "") .. "|" .. (string.match(body, "^([^\n]*)") or "")
end

-- Takes a parked event out of its group's zset and the holds; returns its reason, or false when it
-- was not parked. The caller moves it on (or removes it).
local function unpark(tag, member, body)
  local reason = redis.call("HGET", tag .. ":holds", member)
  if not reason then
    return false
  end
  local group = groupOf(member, body or "")
  redis.call("HDEL", tag .. ":holds", member)
  redis.call("HINCRBY", tag .. ":heldcount", group .. "|" .. reason, -1)
  local heldKey = tag .. ":held:" .. group
  redis.call("ZREM", heldKey, member)
  if redis.call("EXISTS", heldKey) == 0 then
    redis.call("SREM", tag .. ":heldgroups", group)
  end
  return reason
end

-- Parks an event with `reason`; the gen goes up, so a message already sent for it is stale.
-- Returns the waiting status it now has, for the caller's stats move.
local function park(tag, leasedKey, metaKey, member, body, attempt, gen, runAt, version, reason)
  local waiting = "scheduled"
  if attempt > 0 then
    waiting = "retrying"
  end
  unpark(tag, member, body)
  writeMeta(metaKey, member, waiting, attempt, gen + 1, runAt, version)
  redis.call("ZADD", leasedKey, PARKED, member)
  local group = groupOf(member, body)
  redis.call("ZADD", tag .. ":held:" .. group, runAt, member)
  redis.call("SADD", tag .. ":heldgroups", group)
  redis.call("HSET", tag .. ":holds", member, reason)
  redis.call("HINCRBY", tag .. ":heldcount", group .. "|" .. reason, 1)
  return waiting
end

-- Sets an entry the engine cannot read aside, so it never fails its shard again: it leaves the
-- sorted sets, and its body and raw meta move to the shard's quarantine hash (`reason\nmeta\nbody`)
-- for an operator to inspect. It is counted as `quarantined` in its tenant's stats. The journal
-- still has the event, so the recovery sweep re-indexes it from there (restore.lua clears it).
local function quarantine(k, member, reason)
  local body = redis.call("HGET", k.body, member) or ""
  local meta = redis.call("HGET", k.meta, member) or ""
  unpark(shardTag(k.due), member, body)
  redis.call("HSET", k.quarantine, member, reason .. "\n" .. meta .. "\n" .. body)
  dueRem(member)
  redis.call("ZREM", k.leased, member)
  redis.call("HDEL", k.body, member)
  redis.call("HDEL", k.meta, member)
  local tenant = string.match(member, "^([^/]*)/") or ""
  local eventType = string.match(body, "^([^\n]*)") or ""
  redis.call("HINCRBY", k.stats, tenant .. "|" .. eventType .. "|quarantined", 1)
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

-- Takes one entry out of the index: every sorted set the calling script has among due, leased
-- and dead, its body and its meta; its count moves from `from` to `to` (false: only removed).
local function dropEntry(member, body, from, to)
  if K.due then
    dueRem(member)
  end
  for _, set in ipairs({ K.leased or false, K.dead or false }) do
    if set then
      redis.call("ZREM", set, member)
    end
  end
  redis.call("HDEL", K.body, member)
  redis.call("HDEL", K.meta, member)
  bumpStats(K.stats, member, body, from, to)
end

-- Takes many entries out of the index at once: out of `set` (the one sorted set they are all in),
-- their bodies and their metas. The caller counts their stats (countStats).
local function dropMany(set, members)
  if #members == 0 then
    return
  end
  callInSlices("ZREM", set, members)
  callInSlices("HDEL", K.body, members)
  callInSlices("HDEL", K.meta, members)
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

-- Likewise for meta and lease writes: queueMeta and queueLease gather them, and flushWrites makes
-- them at the end (one HSET on K.meta, one ZADD on K.leased, in slices) with the stats.
local metaWrites = {}
local leaseWrites = {}

local function queueMeta(member, status, attempt, gen, runAt, version)
  metaWrites[#metaWrites + 1] = member
  metaWrites[#metaWrites + 1] = formatMeta(status, attempt, gen, runAt, version)
end

local function queueLease(member, deadline)
  leaseWrites[#leaseWrites + 1] = deadline
  leaseWrites[#leaseWrites + 1] = member
end

local function flushWrites()
  if #metaWrites > 0 then
    callInSlices("HSET", K.meta, metaWrites)
  end
  if #leaseWrites > 0 then
    callInSlices("ZADD", K.leased, leaseWrites)
  end
  metaWrites = {}
  leaseWrites = {}
  flushStats(K.stats)
end
