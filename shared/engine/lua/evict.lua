--[[
  Takes a waiting event out of the index when a reschedule moved it beyond the near horizon, so
  Redis holds only the near future; the journal (already written) keeps it, and the dispatcher's
  loader promotes it again ahead of its new time (see docs/horizon.md).

  Only the entry the caller moved is evicted: it must still wait in `due` under exactly the
  version the caller's reschedule got, and be due beyond the near horizon by Redis's clock too.
  A later reschedule (a newer version), a claim or a cancel in between leaves it alone.

  KEYS  K.due  K.tenants  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] version   ARGV[3] now (ms)   ARGV[4] near horizon + margin (ms)

  Returns: 0 OK (evicted), 5 STALE (moved, claimed or changed since, or near after all;
           nothing changed), 4 NOT_FOUND
]]
-- @include state
-- @include horizon

local member = ARGV[1]
local body = redis.call("HGET", K.body, member)
if not body then
  return CODE.NOT_FOUND
end
local score = dueScore(member)
local status, _, _, _, version = readMeta(K.meta, member, 0)
if not score or (status ~= "scheduled" and status ~= "retrying") or version ~= tonumber(ARGV[2]) then
  return CODE.STALE
end
local limit = nearLimit(tonumber(ARGV[3]), ARGV[4])
if not limit or score <= limit then
  return CODE.STALE
end
dueRem(member)
redis.call("HDEL", K.body, member)
redis.call("HDEL", K.meta, member)
bumpStats(K.stats, member, body, status, false)
return CODE.OK
