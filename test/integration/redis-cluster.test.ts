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

it("admits a hold of SKUs on different masters, SKU by SKU, without CROSSSLOT", async () => {
  const { HoldAdmission } = await import("../../shared/ledger/admission.ts");
  const { stockKeys } = await import("../../shared/engine/keys.ts");
  // The ledger's side is not under test here: it says 5 of each SKU are available, none committed.
  const admission = new HoldAdmission(
    client,
    { available: async () => 5, committed: async () => new Set<string>() },
    { prefix: "hgc" },
  );
  const skus = ["apple", "pear", "plum", "fig"];
  const slots = await Promise.all(
    skus.map((sku) =>
      (client as import("ioredis").Cluster).cluster("KEYSLOT", stockKeys("hgc", "t", sku).level),
    ),
  );
  expect(new Set(slots).size).toBeGreaterThan(1);
  const items = skus.map((sku) => ({ sku, quantity: 2 }));
  const first = await admission.admit("t", "r1", "a1", items);
  // A bypass (Redis failed, e.g. CROSSSLOT) would leave SKUs out of `taken`.
  expect("admitted" in first && first.admitted.taken.map((t) => t.sku).sort()).toEqual([...skus].sort());
  const second = await admission.admit("t", "r2", "a2", [...items.slice(0, 3), { sku: "fig", quantity: 4 }]);
  expect(second).toEqual({ refused: [{ sku: "fig", requested: 4, available: 3 }] });
  if ("admitted" in first) await admission.settle("t", first.admitted, false);
  await admission.credit("t", "apple", 1);
  expect(await admission.rebuild("t", "pear")).toBe(true);
  for (const sku of skus) {
    const level = await client.hget(stockKeys("hgc", "t", sku).level, "available");
    expect(level, sku).toBe(sku === "apple" ? "6" : "5");
  }
});
