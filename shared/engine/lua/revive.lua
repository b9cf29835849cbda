--[[
  Replays dead letters: each is scheduled again at its `runAt` with its attempts reset. One due
  within the look-ahead is claimed on the spot (leased, gen + 1), so the caller sends it to the
  queue at once instead of waiting for a dispatcher tick.

  A replay writes the journal first and the index second. When the second write is lost (a crash,
  or a client retry that found the journal already replayed), the journal says pending while the
  index still says dead; whoever sees that revives the entry. `diedBefore` guards against a stale
  journal read: an entry that died after the journal's replay (a later death) is left dead.

  Both stamps compared here are the journal's, never two clocks: `diedBefore` is the `updatedAt`
  of the pending item the caller read, and an entry's score in K.dead is the `finishedAt` the
  journal recorded for its death (the worker buries at that stamp). The journal orders an item's
  stamps itself (shared/journal/stamps.ts): a replay is stamped no earlier than the death it
  replaced, and a death strictly after every earlier write of its event, whatever the writers'
  clocks say. So the death a replay saw is at or before its stamp, and a later one after it.

  KEYS  K.due  K.tenants  K.leased  K.dead  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] now (ms)   ARGV[2] dispatchUntil (ms; 0: never claim on the spot)   ARGV[3] dispatch lease (ms)
  ARGV[4..] triples: member, runAt (ms), diedBefore (the replayed item's journal stamp, ms; 0: no guard)

  Returns three fields per event, in order:
    0, "", ""          OK: waiting in `due`
    2, 0, gen          DISPATCHED: leased with this gen; the caller must send it
    8, status, ""      CONFLICT: not dead ("unreadable" when its meta cannot be read); nothing changed
    5, "dead", ""      STALE: it died after `diedBefore`; nothing changed
    4, "", ""          NOT_FOUND
]]
-- @include state

local now = tonumber(ARGV[1])
local dispatchUntil = tonumber(ARGV[2])
local leaseMs = tonumber(ARGV[3])
local out = {}

for i = 4, #ARGV, 3 do
  local member, runAt, diedBefore = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local body = redis.call("HGET", K.body, member)
  local status, gen, version = "", 0, 0
  if body then
    local _
    status, _, gen, _, version = readMeta(K.meta, member, 0)
  end
  local diedAt = body and status == "dead" and tonumber(redis.call("ZSCORE", K.dead, member) or 0)
  if not body then
    out[#out + 1] = CODE.NOT_FOUND; out[#out + 1] = ""; out[#out + 1] = ""
  elseif status ~= "dead" then
    out[#out + 1] = CODE.CONFLICT; out[#out + 1] = status or "unreadable"; out[#out + 1] = ""
  elseif diedBefore > 0 and diedAt > diedBefore then
    out[#out + 1] = CODE.STALE; out[#out + 1] = "dead"; out[#out + 1] = ""
  else
    redis.call("ZREM", K.dead, member)
    if runAt <= dispatchUntil then
      writeMeta(K.meta, member, "dispatched", 0, gen + 1, runAt, version)
      redis.call("ZADD", K.leased, math.max(runAt, now) + leaseMs, member)
      bumpStats(K.stats, member, body, "dead", "dispatched")
      out[#out + 1] = CODE.DISPATCHED; out[#out + 1] = 0; out[#out + 1] = gen + 1
    else
      writeMeta(K.meta, member, "scheduled", 0, gen, runAt, version)
      dueAdd(member, runAt)
      bumpStats(K.stats, member, body, "dead", "scheduled")
      out[#out + 1] = CODE.OK; out[#out + 1] = ""; out[#out + 1] = ""
    end
  end
end

return out
