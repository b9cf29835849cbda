import { Redis } from "ioredis";
import { startLocalStack, useLocalEndpoints } from "../shared/local/stack.ts";
import { startRedisServer } from "../test/support/redis-servers.ts";
import { BullPeer } from "./bullmq.ts";
import { journalBytesPerEvent, rebuildAfterFlush } from "./horizon.ts";

const redisServer = await startRedisServer();
const redis = new Redis(redisServer.url);
const stack = await startLocalStack({ redisUrl: redisServer.url, dataDir: ".hourglass/bench", persist: false });
useLocalEndpoints(stack);
const bull = new BullPeer(redisServer.url);
const n = Number(process.argv[2] ?? 2000);
try {
  const used = async () => Number((await redis.info("memory")).match(/used_memory:(\d+)/)![1]);
  const near = await journalBytesPerEvent(redis, redisServer.url, n, 1_800_000);
  const far = await journalBytesPerEvent(redis, redisServer.url, n, 86_400_000);
  await redis.flushall();
  const before = await used();
  await bull.enqueueBatch(n, 100);
  const peer = ((await used()) - before) / n;
  await redis.flushall();
  console.log({ n, near, far, peer, nearShare: near / peer, farShare: far / peer });
  console.log(await rebuildAfterFlush(redis, redisServer.url, Math.round(n / 4), n));
} finally {
  await bull.close();
  redis.disconnect();
  await stack.stop();
  await redisServer.kill();
}
process.exit(0);
