--[[
  Puts a running event whose handler failed back in `due`, at the time the backoff chose. A retry
  due within the look-ahead is claimed on the spot instead (leased, gen + 1), so the caller sends
  it to the queue at once: a 1 s backoff must not wait for the next dispatcher tick (a minute on AWS).

  KEYS  K.due  K.tenants  K.leased  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] gen   ARGV[3] next runAt (ms)
  ARGV[4] now (ms)   ARGV[5] dispatchUntil (ms; 0: never claim on the spot)   ARGV[6] dispatch lease (ms)
  ARGV[7] "1": give back the attempt start.lua counted (the platform failed, not the handler)

  Returns: {OK} (waiting in `due`), {DISPATCHED, gen} (the caller must send it),
           {STALE, status} (status "unreadable" when its meta cannot be read), {NOT_FOUND}
]]
-- @include state
-- @include running

runAt = tonumber(ARGV[3])
if ARGV[7] == "1" and attempt > 0 then
  attempt = attempt - 1
end
local now = tonumber(ARGV[4] or 0)
if runAt <= tonumber(ARGV[5] or 0) then
  writeMeta(K.meta, member, "dispatched", attempt, gen + 1, runAt, version)
  redis.call("ZADD", K.leased, math.max(runAt, now) + tonumber(ARGV[6]), member)
  bumpStats(K.stats, member, body, "running", "dispatched")
  return {CODE.DISPATCHED, gen + 1}
end

writeMeta(K.meta, member, "retrying", attempt, gen, runAt, version)
redis.call("ZREM", K.leased, member)
dueAdd(member, runAt)
bumpStats(K.stats, member, body, "running", "retrying")
return {CODE.OK}
