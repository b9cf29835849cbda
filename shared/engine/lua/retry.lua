--[[
  Puts a running event whose handler failed back in `due`, at the time the backoff chose. A retry
  due within the look-ahead is claimed on the spot instead (leased, gen + 1), so the caller sends
  it to the queue at once: a 1 s backoff must not wait for the next dispatcher tick (a minute on AWS).

  KEYS[1] due   KEYS[2] leased   KEYS[3] body   KEYS[4] meta   KEYS[5] stats
  ARGV[1] member   ARGV[2] gen   ARGV[3] next runAt (ms)
  ARGV[4] now (ms)   ARGV[5] dispatchUntil (ms; 0: never claim on the spot)   ARGV[6] dispatch lease (ms)

  Returns: {0} OK (waiting in `due`), {2, gen} DISPATCHED (the caller must send it),
           {5, status} STALE (status "unreadable" when its meta cannot be read), {4} NOT_FOUND
]]
-- @include state

local member = ARGV[1]
local body = redis.call("HGET", KEYS[3], member)
if not body then
  return {4}
end
local status, attempt, gen, _, version = readMeta(KEYS[4], member, 0)
if not status then
  return {5, "unreadable"}
end
if status ~= "running" or gen ~= tonumber(ARGV[2]) then
  return {5, status}
end

local runAt = tonumber(ARGV[3])
local now = tonumber(ARGV[4] or 0)
if runAt <= tonumber(ARGV[5] or 0) then
  writeMeta(KEYS[4], member, "dispatched", attempt, gen + 1, runAt, version)
  redis.call("ZADD", KEYS[2], math.max(runAt, now) + tonumber(ARGV[6]), member)
  bumpStats(KEYS[5], member, body, "running", "dispatched")
  return {2, gen + 1}
end

writeMeta(KEYS[4], member, "retrying", attempt, gen, runAt, version)
redis.call("ZREM", KEYS[2], member)
redis.call("ZADD", KEYS[1], runAt, member)
bumpStats(KEYS[5], member, body, "running", "retrying")
return {0}
