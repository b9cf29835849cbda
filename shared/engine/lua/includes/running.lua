-- The preamble of the scripts that end an attempt (retry, bury), inlined where it says
-- `-- @include running` (after `-- @include state`). ARGV[1] is the member and ARGV[2] the gen of
-- the attempt that ended. Returns early unless the event is running under that gen; otherwise it
-- leaves `member`, `body`, and the meta fields (`status`, `attempt`, `gen`, `runAt`, `version`).
local member = ARGV[1]
local refused, body, status, attempt, gen, runAt, version = lookup(member, CODE.STALE)
if refused then
  return refused
end
if status ~= "running" or gen ~= tonumber(ARGV[2]) then
  return {CODE.STALE, status}
end
