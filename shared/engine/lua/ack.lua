--[[
  Finishes running events whose handlers succeeded: they leave the index entirely. Takes many
  events at once, so a worker's batch costs one round trip.

  KEYS  K.leased  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1..] pairs: member, gen

  Returns two fields per event, in order:
    0, ""        OK
    5, status    STALE: not running under this gen (cancelled, superseded), or status "unreadable"
                 (its meta cannot be read: the next claim quarantines it); nothing changed
    4, ""        NOT_FOUND
]]
-- @include state

local out = {}
local done = {}
local acked = {}

for i = 1, #ARGV, 2 do
  local member = ARGV[i]
  local body = redis.call("HGET", K.body, member)
  if not body then
    out[#out + 1] = CODE.NOT_FOUND; out[#out + 1] = ""
  else
    local status, _, gen = readMeta(K.meta, member, 0)
    if acked[member] then
      out[#out + 1] = CODE.STALE; out[#out + 1] = "succeeded"
    elseif not status then
      out[#out + 1] = CODE.STALE; out[#out + 1] = "unreadable"
    elseif status ~= "running" or gen ~= tonumber(ARGV[i + 1]) then
      out[#out + 1] = CODE.STALE; out[#out + 1] = status
    else
      acked[member] = true
      done[#done + 1] = member
      countStats(member, body, "running", "succeeded")
      out[#out + 1] = CODE.OK; out[#out + 1] = ""
    end
  end
end

dropMany(K.leased, done)
flushStats(K.stats)
return out
