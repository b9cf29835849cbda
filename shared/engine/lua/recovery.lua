--[[
  Reads one shard's recovery state for the sweep (shared/events/recovery.ts), and starts it over
  when it no longer holds: the watermark belongs to the index of one epoch, and a rebuild (a new
  epoch) or a lost key (FLUSHALL) makes whatever it verified unknown again. A watermark older than
  the re-verify period is dropped too, so the sweep reads the whole backlog again now and then,
  whatever cause nobody thought of took an event out of the index.

  KEYS  K.recovery  K.epoch  K.rebuild   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] re-verify period (ms)

  Returns {NOT_FOUND} when the shard has no epoch or is being rebuilt (the rebuild restores
  everything); otherwise {OK, verified or "", until or "", cursor or ""}
    verified  every pending journal event due at or before it was found in the index
    until     an unfinished pass: the due time it reads up to, with `cursor`, its journal position
  `low` (see includes/recovery.lua) survives a restart: a write that lowered it before the restart
  may land in the journal after the new pass has read past it.
]]

local epoch = redis.call("GET", K.epoch)
if not epoch or redis.call("EXISTS", K.rebuild) == 1 then
  return {CODE.NOT_FOUND}
end
local state = redis.call("HMGET", K.recovery, "epoch", "verified", "since", "until", "cursor")
local stale = state[1] ~= epoch
local expired = not state[4] and state[3] and tonumber(ARGV[1]) - tonumber(state[3]) > tonumber(ARGV[2])
if stale or expired then
  redis.call("HDEL", K.recovery, "verified", "since", "until", "cursor")
  redis.call("HSET", K.recovery, "epoch", epoch)
  return {CODE.OK, "", "", ""}
end
return {CODE.OK, state[2] or "", state[4] or "", state[5] or ""}
