import { deploymentKeys } from "../engine/keys.ts";
import type { RedisClient } from "../engine/scripts.ts";

/**
 * The operator's dispatch switch (`POST /v1/admin/pause|resume`): while the key exists, the
 * dispatcher claims nothing. Events keep being accepted and indexed; on resume the claim script
 * takes the overdue ones in due order (per shard, by score), and the worker never starts one
 * before its runAt.
 */
const pauseKey = (prefix: string) => deploymentKeys(prefix).dispatchPaused;

export async function isDispatchPaused(redis: RedisClient, prefix: string): Promise<boolean> {
  return (await redis.exists(pauseKey(prefix))) === 1;
}

export async function setDispatchPaused(redis: RedisClient, prefix: string, paused: boolean): Promise<void> {
  if (paused) await redis.set(pauseKey(prefix), new Date().toISOString());
  else await redis.del(pauseKey(prefix));
}

/** When the dispatch was paused (ISO-8601), or undefined when it runs. */
export async function pausedSince(redis: RedisClient, prefix: string): Promise<string | undefined> {
  return (await redis.get(pauseKey(prefix))) ?? undefined;
}

/**
 * How far ahead a create or reschedule may hand events straight to the queue: the look-ahead, or
 * nothing while dispatch is paused (the events then wait in the index for the resume). Redis is
 * asked only when one of the events is due within the look-ahead, so far-off events cost nothing.
 */
export async function directDispatchHorizon(
  redis: RedisClient,
  prefix: string,
  now: number,
  lookAheadMs: number,
  runAts: readonly number[],
): Promise<number> {
  const horizon = now + lookAheadMs;
  if (!runAts.some((runAt) => runAt <= horizon)) return horizon;
  return (await isDispatchPaused(redis, prefix)) ? 0 : horizon;
}
