--[[
  Moves a not-yet-started event to a new time. The gen goes up, so a message already in the queue
  for the old time is recognised as stale and dropped.

  Index and journal agree through a version (the meta's fifth field, the journal item's `version`):
  - a client's reschedule (ARGV[6] = "") bumps the index's version and returns it; the journal
    write that follows only applies a version newer than its own, so of two concurrent reschedules
    both stores end with the later one, and a crash between the two writes leaves the index ahead;
  - a sync from the journal (ARGV[6] = the journal's version) applies only when the journal is at
    least as new as the index: the dispatcher uses it when the index lost a write the journal has.

  KEYS[1] due   KEYS[2] leased   KEYS[3] body   KEYS[4] meta   KEYS[5] stats
  ARGV[1] member   ARGV[2] runAt (ms)   ARGV[3] now (ms)   ARGV[4] dispatchUntil (ms)
  ARGV[5] dispatch lease (ms)   ARGV[6] "" or the journal's version

  Returns:
    {1, version}                  SCHEDULED: waiting in `due`
    {2, attempt, gen, version}    DISPATCHED: due within the look-ahead; the caller must send it
    {5, version}                  STALE: a sync older than the index's version; nothing changed
    {8, status}                   CONFLICT: running or dead ("unreadable": meta cannot be read)
    {4}                           NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local runAt = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local body = redis.call("HGET", KEYS[3], member)
if not body then
  return {4}
end
local status, attempt, gen, _, version = readMeta(KEYS[4], member, 0)
if not status then
  return {8, "unreadable"}
end
if status == "running" or status == "dead" then
  return {8, status}
end
if ARGV[6] == "" then
  version = version + 1
elseif tonumber(ARGV[6]) < version then
  return {5, version}
else
  version = tonumber(ARGV[6])
end

-- A held-back (parked) event leaves its group: it is moved like any waiting event, and its new
-- time is judged by the limits again when it is claimed.
unpark(shardTag(KEYS[1]), member, body)
if runAt <= tonumber(ARGV[4]) then
  writeMeta(KEYS[4], member, "dispatched", attempt, gen + 1, runAt, version)
  redis.call("ZREM", KEYS[1], member)
  redis.call("ZADD", KEYS[2], math.max(runAt, now) + tonumber(ARGV[5]), member)
  bumpStats(KEYS[5], member, body, status, "dispatched")
  return {2, attempt, gen + 1, version}
end

local waiting = "scheduled"
if attempt > 0 then
  waiting = "retrying"
end
writeMeta(KEYS[4], member, waiting, attempt, gen + 1, runAt, version)
redis.call("ZREM", KEYS[2], member)
redis.call("ZADD", KEYS[1], runAt, member)
bumpStats(KEYS[5], member, body, status, waiting)
return {1, version}
