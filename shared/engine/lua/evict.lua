--[[
  Takes a waiting event out of the index when a reschedule moved it beyond the near horizon, so
  Redis holds only the near future; the journal (already written) keeps it, and the dispatcher's
  loader promotes it again ahead of its new time (see docs/horizon.md).

  Only the entry the caller moved is evicted: it must still wait in `due` under exactly the
  version the caller's reschedule got, and be due beyond the near horizon by Redis's clock too.
  A later reschedule (a newer version), a claim or a cancel in between leaves it alone.

  KEYS[1] due   KEYS[2] body   KEYS[3] meta   KEYS[4] stats
  ARGV[1] member   ARGV[2] version   ARGV[3] now (ms)   ARGV[4] near horizon + margin (ms)

  Returns: 0 OK (evicted), 5 STALE (moved, claimed or changed since, or near after all;
           nothing changed), 4 NOT_FOUND
]]
-- @include state
-- @include horizon

local member = ARGV[1]
local body = redis.call("HGET", KEYS[2], member)
if not body then
  return 4
end
local score = redis.call("ZSCORE", KEYS[1], member)
local status, _, _, _, version = readMeta(KEYS[3], member, 0)
if not score or (status ~= "scheduled" and status ~= "retrying") or version ~= tonumber(ARGV[2]) then
  return 5
end
local limit = nearLimit(tonumber(ARGV[3]), ARGV[4])
if not limit or tonumber(score) <= limit then
  return 5
end
redis.call("ZREM", KEYS[1], member)
redis.call("HDEL", KEYS[2], member)
redis.call("HDEL", KEYS[3], member)
bumpStats(KEYS[4], member, body, status, false)
return 0
