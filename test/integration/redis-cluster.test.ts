import { afterAll, beforeAll, expect, it } from "vitest";
import { createRedis } from "../../shared/engine/redis.ts";
import { RedisIndex } from "../../shared/engine/redis-index.ts";
import type { RedisClient } from "../../shared/engine/scripts.ts";
import { indexContract } from "../support/index-contract.ts";
import { startRedisCluster } from "../support/redis-servers.ts";

// The same contract as on a single node, on a 3-master cluster: every script touches keys of one
// hash tag only, so none fails with CROSSSLOT.
let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
let client: RedisClient;
let index: RedisIndex;
let n = 0;

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = createRedis(cluster.url, true);
  index = new RedisIndex(client, "hgc", 8);
});

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

it("spreads the shards over more than one master", async () => {
  const masters = new Set<string>();
  for (let shard = 0; shard < index.shards; shard++) {
    const slot = Number(
      await (client as import("ioredis").Cluster).cluster("KEYSLOT", index.keys(shard).due),
    );
    const nodes = (client as import("ioredis").Cluster).slots[slot] ?? [];
    masters.add(String(nodes[0]));
  }
  expect(masters.size).toBeGreaterThan(1);
});

indexContract(
  () => index,
  () => `tenant${n++}`,
);
