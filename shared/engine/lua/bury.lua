--[[
  Moves a running event to the dead letters: attempts exhausted or a non-retryable error.
  Its body stays, so the dead letter can be inspected and replayed.

  KEYS  K.leased  K.dead  K.body  K.meta  K.stats   (declared by name in scripts.ts)
  ARGV[1] member   ARGV[2] gen   ARGV[3] now (ms)

  Returns: {OK}, {STALE, status} (status "unreadable" when its meta cannot be read), {NOT_FOUND}
]]
-- @include state
-- @include running

writeMeta(K.meta, member, "dead", attempt, gen, runAt, version)
redis.call("ZREM", K.leased, member)
redis.call("ZADD", K.dead, tonumber(ARGV[3]), member)
bumpStats(K.stats, member, body, "running", "dead")
return {CODE.OK}
