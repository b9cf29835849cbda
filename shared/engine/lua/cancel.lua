--[[
  Cancels an event that has not started: it leaves the index at once, so a message already in the
  queue finds nothing when it arrives and is dropped.

  The index is cancelled before the journal (only the index knows whether the event started), so
  for a moment the journal still says pending, and a restore working from a journal read taken
  before the cancel would bring the event back. A tombstone (`cancelled`: member → score) stops
  that: restore.lua refuses members that have one. It is written even when the index does not
  hold the event (Redis lost it and a restore may be on its way). Its score is UNCONFIRMED plus
  the cancel's time until the journal says cancelled too (the service, or the recovery sweep after
  a crash, then sets it to that time), and only confirmed tombstones older than `keep` are pruned,
  here: by then every journal read that predates the cancel has been applied or dropped. The
  cancel's time lets a later create tell a tombstone its own cancel left from one a cancel whose
  journal write failed long ago left behind (shared/events/tombstones.ts).

  A pending event due by now leaves the recovery sweep's verified range (includes/recovery.lua)
  in the same step: if the process dies before the journal says cancelled, the sweep reads the
  event again, finds the tombstone and finishes the cancel.

  KEYS  K.due  K.tenants  K.leased  K.dead  K.body  K.meta  K.stats  K.cancelled  K.recovery   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] now (ms)   ARGV[3] keep tombstones for (ms)

  Returns:
    {0, previous status}   OK (previous status "unreadable" when its meta could not be read)
    {8, status}            CONFLICT: running or dead; nothing changed
    {4}                    NOT_FOUND (tombstone written)
]]
-- @include state
-- @include recovery

local member = ARGV[1]
local now = tonumber(ARGV[2])
-- Larger than any time: an unconfirmed tombstone is never pruned. Formatted, not passed as a
-- number, which Lua would round to 14 digits.
local UNCONFIRMED = string.format("%d", 9e15 + now)
redis.call("ZREMRANGEBYSCORE", K.cancelled, "-inf", "(" .. string.format("%d", now - tonumber(ARGV[3])))
local body = redis.call("HGET", K.body, member)
if not body then
  redis.call("ZADD", K.cancelled, UNCONFIRMED, member)
  return {CODE.NOT_FOUND}
end
-- An unreadable entry cannot be shown to be running; cancelling it makes sure it never runs.
local status, _, _, runAt = readMeta(K.meta, member, dueScore(member) or 0)
if status == "running" or status == "dead" then
  return {CODE.CONFLICT, status}
end
if runAt <= now then
  lowerVerified(K.recovery, runAt)
end

redis.call("ZADD", K.cancelled, UNCONFIRMED, member)
-- A held-back (parked) event leaves its group too.
unpark(shardTag(K.due), member, body)
-- Not dead (refused above), so not in `dead`.
dropEntry(member, body, status, "cancelled")
return {CODE.OK, status or "unreadable"}
