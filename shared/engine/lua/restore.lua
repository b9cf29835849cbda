--[[
  Re-indexes events from the durable journal after Redis lost them. The gen starts from `now`, so
  no message sent before the loss can match a dispatch made after it.

  - An event with a tombstone (cancelled recently, see cancel.lua) is refused: the journal read
    behind this entry may predate the cancel. A tombstone beside an entry the index holds is older
    than that entry (a cancel removes its event), so it is dropped instead. A replay (ARGV[2] = "1") is the client's explicit
    wish to run the event again, so it clears the tombstone instead.
  - An event the index already knows is left alone, unless it is waiting in `due` under an older
    version than the journal's: then it moves to the journal's time (a reschedule the index lost).
  - A quarantined event (see claim.lua) is re-indexed from the journal, and leaves the quarantine.
  - A pending event the index does not know and that is due beyond the near horizon (ARGV[3], see
    includes/horizon.lua) is left to the journal (FAR): the dispatcher's loader promotes it later.

  KEYS  K.due  K.tenants  K.dead  K.body  K.meta  K.stats  K.cancelled  K.quarantine   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] "1" for a replay, else "0"
  ARGV[3] near horizon + margin (ms), or "" to restore whatever the due time
  ARGV[4..] sextuples: member, runAt (ms), body, attempt, status ("scheduled"|"retrying"|"dead"),
            version

  Returns one code per event, in order: 10 RESTORED, 11 PRESENT, 12 TOMBSTONED, 13 FAR
]]
-- @include state
-- @include horizon

local now = tonumber(ARGV[1])
local replay = ARGV[2] == "1"
local limit = nearLimit(now, ARGV[3])
local codes = {}
-- Restored waiting events go into the tenants' sets in one write at the end (dueAddMany): a few
-- commands a tenant instead of a few an event, which is most of a rebuild's time. `at[member]` is
-- the place of its runAt in the list, so a repeat of the member in this call sees it waiting.
local restored, at = {}, {}

for i = 4, #ARGV, 6 do
  local member, runAt, body = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local attempt, status, version = tonumber(ARGV[i + 3]), ARGV[i + 4], tonumber(ARGV[i + 5])
  if replay then
    redis.call("ZREM", K.cancelled, member)
  end
  local tombstoned = redis.call("ZSCORE", K.cancelled, member)
  if tombstoned and redis.call("HEXISTS", K.body, member) == 1 then
    -- A cancel takes its event out of the index, and only the create of a new event under the
    -- same id puts one back: this tombstone belongs to an earlier cancel (say, of an id that did
    -- not exist yet), and must not cancel the new event.
    redis.call("ZREM", K.cancelled, member)
    tombstoned = false
  end
  if tombstoned then
    codes[#codes + 1] = CODE.TOMBSTONED
  elseif limit and status ~= "dead" and runAt > limit and redis.call("HEXISTS", K.body, member) == 0 then
    codes[#codes + 1] = CODE.FAR
  elseif redis.call("HSETNX", K.body, member, body) == 0 then
    local current, currentAttempt, gen, _, currentVersion = readMeta(K.meta, member, 0)
    local waiting = at[member] or dueScore(member)
    if waiting and (current == "scheduled" or current == "retrying") and currentVersion < version then
      writeMeta(K.meta, member, current, currentAttempt, gen + 1, runAt, version)
      if at[member] then
        restored[at[member]] = runAt
      else
        dueAdd(member, runAt)
      end
    end
    codes[#codes + 1] = CODE.PRESENT
  else
    writeMeta(K.meta, member, status, attempt, now, runAt, version)
    if status == "dead" then
      redis.call("ZADD", K.dead, now, member)
    else
      restored[#restored + 1] = runAt
      restored[#restored + 1] = member
      at[member] = #restored - 1
    end
    countStats(member, body, false, status)
    if redis.call("HDEL", K.quarantine, member) == 1 then
      countStats(member, body, "quarantined", false)
    end
    codes[#codes + 1] = CODE.RESTORED
  end
end

-- Not fresh: a leftover entry under a restored id (a body lost by hand) is moved, and counted once.
dueAddMany(restored)
flushStats(K.stats)
return codes
