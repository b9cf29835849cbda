--[[
  Cancels an event that has not started: it leaves the index at once, so a message already in the
  queue finds nothing when it arrives and is dropped.

  The index is cancelled before the journal (only the index knows whether the event started), so
  for a moment the journal still says pending, and a restore working from a journal read taken
  before the cancel would bring the event back. A tombstone (`cancelled`: member → score) stops
  that: restore.lua refuses members that have one. It is written even when the index does not
  hold the event (Redis lost it and a restore may be on its way). Its score is UNCONFIRMED until
  the journal says cancelled too (the service, or the recovery sweep after a crash, then sets it
  to that time), and only confirmed tombstones older than `keep` are pruned, here: by then every
  journal read that predates the cancel has been applied or dropped.

  KEYS[1] due   KEYS[2] leased   KEYS[3] dead   KEYS[4] body   KEYS[5] meta   KEYS[6] stats
  KEYS[7] cancelled (tombstones)
  ARGV[1] member   ARGV[2] now (ms)   ARGV[3] keep tombstones for (ms)

  Returns:
    {0, previous status}   OK (previous status "unreadable" when its meta could not be read)
    {8, status}            CONFLICT: running or dead; nothing changed
    {4}                    NOT_FOUND (tombstone written)
]]
-- @include state

local member = ARGV[1]
local now = tonumber(ARGV[2])
-- Larger than any time: an unconfirmed tombstone is never pruned.
local UNCONFIRMED = 9e15
redis.call("ZREMRANGEBYSCORE", KEYS[7], "-inf", "(" .. string.format("%d", now - tonumber(ARGV[3])))
local body = redis.call("HGET", KEYS[4], member)
if not body then
  redis.call("ZADD", KEYS[7], UNCONFIRMED, member)
  return {4}
end
-- An unreadable entry cannot be shown to be running; cancelling it makes sure it never runs.
local status = readMeta(KEYS[5], member, 0)
if status == "running" or status == "dead" then
  return {8, status}
end

redis.call("ZADD", KEYS[7], UNCONFIRMED, member)
-- A held-back (parked) event leaves its group too.
unpark(shardTag(KEYS[1]), member, body)
redis.call("ZREM", KEYS[1], member)
redis.call("ZREM", KEYS[2], member)
redis.call("HDEL", KEYS[4], member)
redis.call("HDEL", KEYS[5], member)
bumpStats(KEYS[6], member, body, status, "cancelled")
return {0, status or "unreadable"}
