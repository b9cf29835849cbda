import type { Redis } from "ioredis";
import { benchHourglass, enqueueBatch } from "./hourglass.ts";

/**
 * Benchmarks of the near horizon (issue 13 §4, docs/horizon.md): Redis memory for events due
 * within and beyond it, and the rebuild after a `FLUSHALL`, which reloads only the near horizon.
 * Both run on the benchmark's own redis-server, which they flush.
 */
const usedMemory = async (redis: Redis) =>
  Number((await redis.info("memory")).match(/used_memory:(\d+)/)![1]);

/** Redis bytes per pending event with the journal on, `n` events each due `delayMs` from now. */
export async function journalBytesPerEvent(redis: Redis, redisUrl: string, n: number, delayMs: number) {
  await redis.flushall();
  const before = await usedMemory(redis);
  const { hourglass } = await benchHourglass("full", redisUrl);
  await enqueueBatch(hourglass, n, 100, 500, delayMs);
  const bytes = ((await usedMemory(redis)) - before) / n;
  await hourglass.close();
  await redis.flushall();
  return bytes;
}

/**
 * `near` events due within the horizon and `far` ones a day ahead; then Redis loses everything,
 * and every shard is rebuilt from the journal. Returns what came back and how long it took.
 */
export async function rebuildAfterFlush(redis: Redis, redisUrl: string, near: number, far: number) {
  await redis.flushall();
  const { hourglass } = await benchHourglass("full", redisUrl);
  await enqueueBatch(hourglass, near, 100, 500, 10 * 60_000);
  await enqueueBatch(hourglass, far, 100, 500, 86_400_000);
  await redis.flushall();
  const started = performance.now();
  const restored = await Promise.all(
    Array.from({ length: hourglass.config.shards }, (_, shard) => hourglass.dispatcher.rebuild(shard)),
  );
  const ms = performance.now() - started;
  const { size } = await hourglass.dispatcher.indexHealth();
  await hourglass.close();
  await redis.flushall();
  return { reloaded: restored.reduce((a, b) => a + b, 0), indexSize: size, pending: near + far, ms };
}
