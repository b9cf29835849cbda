--[[
  Moves a not-yet-started event to a new time. The gen goes up, so a message already in the queue
  for the old time is recognised as stale and dropped.

  Index and journal agree through a version (the meta's fifth field, the journal item's `version`):
  - a client's reschedule (ARGV[6] = "") bumps the index's version and returns it; the journal
    write that follows only applies a version newer than its own, so of two concurrent reschedules
    both stores end with the later one, and a crash between the two writes leaves the index ahead;
  - a sync from the journal (ARGV[6] = the journal's version) applies only when the journal is at
    least as new as the index: the dispatcher uses it when the index lost a write the journal has.

  KEYS  K.due  K.tenants  K.leased  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] runAt (ms)   ARGV[3] now (ms)   ARGV[4] dispatchUntil (ms)
  ARGV[5] dispatch lease (ms)   ARGV[6] "" or the journal's version

  Returns:
    {SCHEDULED, version}                 waiting in `due`
    {DISPATCHED, attempt, gen, version}  due within the look-ahead; the caller must send it
    {STALE, version}                     a sync older than the index's version; nothing changed
    {CONFLICT, status}                   running or dead ("unreadable": meta cannot be read)
    {NOT_FOUND}
]]
-- @include state

local member = ARGV[1]
local runAt = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local refused, body, status, attempt, gen, _, version = lookup(member, CODE.CONFLICT)
if refused then
  return refused
end
if status == "running" or status == "dead" then
  return {CODE.CONFLICT, status}
end
if ARGV[6] == "" then
  version = version + 1
elseif tonumber(ARGV[6]) < version then
  return {CODE.STALE, version}
else
  version = tonumber(ARGV[6])
end

-- A held-back (parked) event leaves its group: it is moved like any waiting event, and its new
-- time is judged by the limits again when it is claimed.
unpark(shardTag(K.due), member, body)
if runAt <= tonumber(ARGV[4]) then
  writeMeta(K.meta, member, "dispatched", attempt, gen + 1, runAt, version)
  dueRem(member)
  redis.call("ZADD", K.leased, math.max(runAt, now) + tonumber(ARGV[5]), member)
  bumpStats(K.stats, member, body, status, "dispatched")
  return {CODE.DISPATCHED, attempt, gen + 1, version}
end

local waiting = "scheduled"
if attempt > 0 then
  waiting = "retrying"
end
writeMeta(K.meta, member, waiting, attempt, gen + 1, runAt, version)
redis.call("ZREM", K.leased, member)
dueAdd(member, runAt)
bumpStats(K.stats, member, body, status, waiting)
return {CODE.SCHEDULED, version}
