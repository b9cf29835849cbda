--[[
  Reads one shard's near-horizon state for the loader (see docs/horizon.md), with Redis's own
  clock, in one call on the shard's slot: on a cluster the clock is that of the node holding the
  shard, the same clock schedule.lua and restore.lua judge "near" by.

  KEYS  K.horizon  K.epoch  K.rebuild   (declared by name in scripts.ts)

  Returns {redisNow (ms), loaded or "", target or "", cursor or "", epoch 1|0, rebuilding 1|0}
    loaded   every pending journal event of the shard due at or before it is in the index (or
             was, and a later change took it out knowingly); "" when unknown
    target   the due time an unfinished loader sweep runs to, with `cursor`, its journal position
]]

local time = redis.call("TIME")
local redisNow = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call("HMGET", K.horizon, "loaded", "target", "cursor")
return {
  redisNow,
  state[1] or "",
  state[2] or "",
  state[3] or "",
  redis.call("EXISTS", K.epoch),
  redis.call("EXISTS", K.rebuild),
}
