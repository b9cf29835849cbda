-- The near horizon (see docs/horizon.md), inlined where a script says `-- @include horizon`.
--
-- Only events due within the near horizon live in the index; the rest live only in the journal
-- until the dispatcher's loader promotes them. `nearLimit` is the last due time that is near: the
-- later of the caller's clock and Redis's own clock (TIME), plus the horizon and its margin. The
-- loader promotes up to the EARLIER of the two clocks plus the horizon, so whatever a loader has
-- already passed is near for every later create, however the callers' clocks drift. An empty
-- argument means no horizon (the engine-only mode, without a journal, indexes everything).
local function nearLimit(callerNow, nearMsArg)
  if nearMsArg == nil or nearMsArg == "" then
    return false
  end
  local time = redis.call("TIME")
  local redisNow = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  return math.max(callerNow, redisNow) + tonumber(nearMsArg)
end
