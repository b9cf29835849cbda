--[[
  Holds events back: the worker's admission (admit.lua) refused to start them
  (their type is paused, out of rate tokens or concurrency slots, or their tenant is at its cap of
  running events). Each is parked (see `park` in state.lua) with its runAt and attempt unchanged
  and a new gen, so the message that asked is stale; the dispatcher releases it in due order when
  its group's allowance lets it. Never lost, never early, never counted as a failed attempt.

  The worker asks admission right after start.lua (so the never-early and cancel checks come
  first and no token is spent on a message that would not run): the events are then `running`
  under the message's gen, and the attempt start.lua counted is given back, since no handler ran.
  A worker that dies between the two leaves a running event whose lease runs out: redelivered,
  with that attempt counted, as for any crash after start.

  KEYS  K.leased  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] reason ("paused"|"rate"|"concurrency")
  ARGV[2] "running" (started by this message: give the attempt back) or "dispatched"
  ARGV[3..] pairs: member, gen (from the message)

  Returns one code per event, in order:
    0   OK: parked
    4   NOT_FOUND: not in the index
    5   STALE: not in ARGV[2]'s status under this gen (superseded, cancelled, unreadable)
]]
-- @include state

local tag = shardTag(K.leased)
local out = {}
local from = ARGV[2]
local giveBack = 0
if from == "running" then
  giveBack = 1
end
for i = 3, #ARGV, 2 do
  local member, gen = ARGV[i], tonumber(ARGV[i + 1])
  local body = redis.call("HGET", K.body, member)
  if not body then
    out[#out + 1] = CODE.NOT_FOUND
  else
    local status, attempt, currentGen, runAt, version = readMeta(K.meta, member, 0)
    if status ~= from or currentGen ~= gen then
      out[#out + 1] = CODE.STALE
    else
      local waiting = park(tag, K.leased, K.meta, member, body, math.max(0, attempt - giveBack), currentGen,
        runAt, version, ARGV[1])
      countStats(member, body, from, waiting)
      out[#out + 1] = CODE.OK
    end
  end
end
flushStats(K.stats)
return out
