import { randomBytes } from "node:crypto";
import { afterAll } from "vitest";
import { createRedis } from "../../shared/engine/redis.ts";
import { RedisIndex } from "../../shared/engine/redis-index.ts";
import { indexContract } from "../support/index-contract.ts";

const prefix = `ix${randomBytes(3).toString("hex")}`;
const redis = createRedis(process.env.HOURGLASS_REDIS_URL ?? "redis://127.0.0.1:6379", false);
const index = new RedisIndex(redis, prefix, 4);
let n = 0;

afterAll(async () => {
  const keys = await redis.keys(`{${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

indexContract(
  () => index,
  () => `tenant${n++}`,
);
