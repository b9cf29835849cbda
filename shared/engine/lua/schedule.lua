--[[
  Indexes new events in one shard. An event due before `dispatchUntil` is claimed on the spot
  (leased, gen 1), so the caller can send it to the queue without waiting for the next tick.

  KEYS  K.due  K.leased  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] dispatchUntil (ms)   ARGV[3] dispatch lease (ms)
  ARGV[4..] triples: member, runAt (ms), body

  Returns one code per event, in order:
    1 SCHEDULED   waiting in `due`
    2 DISPATCHED  leased with gen 1; the caller must send it
    3 EXISTS      already indexed (idempotent repeat); nothing changed
]]
-- @include state

local now = tonumber(ARGV[1])
local dispatchUntil = tonumber(ARGV[2])
local leaseMs = tonumber(ARGV[3])
local codes = {}
local due = {}
local leased = {}

for i = 4, #ARGV, 3 do
  local member, runAt, body = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  if redis.call("HSETNX", K.body, member, body) == 0 then
    codes[#codes + 1] = CODE.EXISTS
  elseif runAt <= dispatchUntil then
    writeMeta(K.meta, member, "dispatched", 0, 1, runAt)
    leased[#leased + 1] = math.max(runAt, now) + leaseMs
    leased[#leased + 1] = member
    countStats(member, body, false, "dispatched")
    codes[#codes + 1] = CODE.DISPATCHED
  else
    due[#due + 1] = runAt
    due[#due + 1] = member
    countStats(member, body, false, "scheduled")
    codes[#codes + 1] = CODE.SCHEDULED
  end
end

if #due > 0 then
  callInSlices("ZADD", K.due, due)
end
if #leased > 0 then
  callInSlices("ZADD", K.leased, leased)
end
flushStats(K.stats)
return codes
