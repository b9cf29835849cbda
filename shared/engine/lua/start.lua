--[[
  Marks dispatched events as running, each only if the message that asks is the current one. This
  is the gate behind "never early", "cancel means cancel" and "one run per dispatch". Takes many
  events at once, so a worker's batch costs one round trip.

  KEYS  K.leased  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] now (ms), or "" to use Redis's own clock (TIME)   ARGV[2] run lease (ms)
  ARGV[3..] pairs: member, gen (from the message)

  Workers pass "": "early" is then judged by one clock, the index's, not by whichever worker
  asks (a worker whose clock runs ahead, or whose timer fired early, would otherwise start early).

  Returns three fields per event, in order:
    0, attempt, body   OK: running now, attempt counted
    4, "", ""          NOT_FOUND: not in the index (finished, cancelled, or Redis lost it)
    5, status, ""      STALE: superseded by a later dispatch, a reschedule or a cancel; status
                       "unreadable" when its meta cannot be read (the next claim quarantines it)
    6, "", ""          DUPLICATE: this dispatch is already running elsewhere
    7, runAt, now      EARLY: the event is not due yet (by `now`, the time judged by); the
                       caller must wait `runAt - now` and ask again
]]
-- @include state

local now = tonumber(ARGV[1])
if ARGV[1] == "" then
  local time = redis.call("TIME")
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local deadline = now + tonumber(ARGV[2])
local out = {}
local started = {}

for i = 3, #ARGV, 2 do
  local member, gen = ARGV[i], tonumber(ARGV[i + 1])
  local body = redis.call("HGET", K.body, member)
  if not body then
    out[#out + 1] = CODE.NOT_FOUND; out[#out + 1] = ""; out[#out + 1] = ""
  elseif started[member] then
    -- The same message twice in one call: the first one runs.
    out[#out + 1] = CODE.DUPLICATE; out[#out + 1] = ""; out[#out + 1] = ""
  else
    local status, attempt, currentGen, runAt, version = readMeta(K.meta, member, 0)
    if not status then
      out[#out + 1] = CODE.STALE; out[#out + 1] = "unreadable"; out[#out + 1] = ""
    elseif currentGen ~= gen then
      out[#out + 1] = CODE.STALE; out[#out + 1] = status; out[#out + 1] = ""
    elseif status == "running" then
      out[#out + 1] = CODE.DUPLICATE; out[#out + 1] = ""; out[#out + 1] = ""
    elseif status ~= "dispatched" then
      out[#out + 1] = CODE.STALE; out[#out + 1] = status; out[#out + 1] = ""
    elseif now < runAt then
      out[#out + 1] = CODE.EARLY; out[#out + 1] = runAt; out[#out + 1] = now
    else
      started[member] = true
      queueMeta(member, "running", attempt + 1, gen, runAt, version)
      queueLease(member, deadline)
      countStats(member, body, "dispatched", "running")
      out[#out + 1] = CODE.OK; out[#out + 1] = attempt + 1; out[#out + 1] = body
    end
  end
end

flushWrites()
return out
