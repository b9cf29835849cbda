--[[
  Re-indexes events from the durable journal after Redis lost them. The gen starts from `now`, so
  no message sent before the loss can match a dispatch made after it.

  - An event with a tombstone (cancelled recently, see cancel.lua) is refused: the journal read
    behind this entry may predate the cancel. A replay (ARGV[2] = "1") is the client's explicit
    wish to run the event again, so it clears the tombstone instead.
  - An event the index already knows is left alone, unless it is waiting in `due` under an older
    version than the journal's: then it moves to the journal's time (a reschedule the index lost).
  - A quarantined event (see claim.lua) is re-indexed from the journal, and leaves the quarantine.

  KEYS  K.due  K.dead  K.body  K.meta  K.stats  K.cancelled  K.quarantine   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] "1" for a replay, else "0"
  ARGV[3..] sextuples: member, runAt (ms), body, attempt, status ("scheduled"|"retrying"|"dead"),
            version

  Returns one code per event, in order: 10 RESTORED, 11 PRESENT, 12 TOMBSTONED
]]
-- @include state

local now = tonumber(ARGV[1])
local replay = ARGV[2] == "1"
local codes = {}

for i = 3, #ARGV, 6 do
  local member, runAt, body = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local attempt, status, version = tonumber(ARGV[i + 3]), ARGV[i + 4], tonumber(ARGV[i + 5])
  if replay then
    redis.call("ZREM", K.cancelled, member)
  end
  if redis.call("ZSCORE", K.cancelled, member) then
    codes[#codes + 1] = CODE.TOMBSTONED
  elseif redis.call("HSETNX", K.body, member, body) == 0 then
    local current, currentAttempt, gen, _, currentVersion = readMeta(K.meta, member, 0)
    local waiting = redis.call("ZSCORE", K.due, member)
    if waiting and (current == "scheduled" or current == "retrying") and currentVersion < version then
      writeMeta(K.meta, member, current, currentAttempt, gen + 1, runAt, version)
      redis.call("ZADD", K.due, runAt, member)
    end
    codes[#codes + 1] = CODE.PRESENT
  else
    writeMeta(K.meta, member, status, attempt, now, runAt, version)
    if status == "dead" then
      redis.call("ZADD", K.dead, now, member)
    else
      redis.call("ZADD", K.due, runAt, member)
    end
    countStats(member, body, false, status)
    if redis.call("HDEL", K.quarantine, member) == 1 then
      countStats(member, body, "quarantined", false)
    end
    codes[#codes + 1] = CODE.RESTORED
  end
end

flushStats(K.stats)
return codes
