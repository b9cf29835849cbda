-- The preamble of the scripts that end an attempt (retry, bury), inlined where it says
-- `-- @include running` (after `-- @include state`). ARGV[1] is the member and ARGV[2] the gen of
-- the attempt that ended. Returns early unless the event is running under that gen; otherwise it
-- leaves `member`, `body`, and the meta fields (`status`, `attempt`, `gen`, `runAt`, `version`).
local member = ARGV[1]
local body = redis.call("HGET", K.body, member)
if not body then
  return {CODE.NOT_FOUND}
end
local status, attempt, gen, runAt, version = readMeta(K.meta, member, 0)
if not status then
  return {CODE.STALE, "unreadable"}
end
if status ~= "running" or gen ~= tonumber(ARGV[2]) then
  return {CODE.STALE, status}
end
