--[[
  Removes an event from the index whatever its state, when the durable journal says it already
  finished (for example a worker crashed between the journal write and the ack), or when the
  entry is a leftover of an older event under the same id whose journal item has expired.

  KEYS  K.due  K.tenants  K.leased  K.dead  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] final status for the counters ("succeeded"|"cancelled"|"dead"), or ""
          to only remove it from the counters (a leftover)

  Returns: {0, previous status} OK, {4} NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", K.body, member)
if not body then
  return {CODE.NOT_FOUND}
end
-- An unreadable meta has no status to count down from.
local status = readMeta(K.meta, member, 0)

unpark(shardTag(K.due), member, body)
local final = ARGV[2]
if final == "" then
  final = false
end
dropEntry(member, body, status, final)
return {CODE.OK, status or "unreadable"}
