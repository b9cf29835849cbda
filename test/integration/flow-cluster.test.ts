import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import { encodeBody } from "../../shared/engine/body.ts";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { memberOf } from "../../shared/engine/keys.ts";
import { createRedis } from "../../shared/engine/redis.ts";
import { RedisIndex } from "../../shared/engine/redis-index.ts";
import type { RedisClient } from "../../shared/engine/scripts.ts";
import { FlowControl } from "../../shared/limits/flow-control.ts";
import { startRedisCluster } from "../support/redis-servers.ts";

// Flow control's scripts on a 3-master Redis Cluster: parking (claim, hold, cancel, inspect) keeps
// to the shard's slot, and admission, slots, buckets and allowances keep to the tenant's slot, so
// none fails with CROSSSLOT.
let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
let client: RedisClient;

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = createRedis(cluster.url, true);
});
afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

it("parks events beyond a group's allowance, reports them held, releases them in due order", async () => {
  const index = new RedisIndex(client, "hgf", 1);
  await index.setEpoch(0, "1");
  const now = Date.now();
  const body = encodeBody({ type: "x" }, { inline: {} });
  const entries = [0, 1, 2, 3].map((i) => ({ member: memberOf("t", `e${i}`), runAt: now - 1_000 + i, body }));
  await index.schedule(entries, now, 0, 30_000);
  const rate = [{ group: "t|x", allowance: 1, reason: "rate" as const }];

  const first = await index.claim(0, now, now + 5_000, 100, 30_000, rate);
  if (first.epochMissing) throw new Error("epoch missing");
  expect(first.claimed.map((c) => c.member)).toEqual([memberOf("t", "e0")]);
  expect(first.parked).toBe(3);
  expect(first.taken.get("t|x")).toBe(1);
  expect(await index.heldCounts(0)).toEqual({ "t|x|rate": 3 });
  expect(await index.heldGroups(0)).toEqual(["t|x"]);
  expect((await index.inspect(memberOf("t", "e2")))?.heldBy).toBe("rate");
  expect((await index.inspect(memberOf("t", "e2")))?.status).toBe("scheduled");

  // Cancel unparks; a dispatched event refused at admission is parked by hold.
  expect((await index.cancel(memberOf("t", "e3"), now)).code).toBe(ScriptCode.OK);
  expect(await index.heldCounts(0)).toEqual({ "t|x|rate": 2 });
  expect(await index.hold([first.claimed[0]!], "concurrency", "dispatched")).toEqual([ScriptCode.OK]);
  expect(await index.heldCounts(0)).toEqual({ "t|x|rate": 2, "t|x|concurrency": 1 });

  // No allowance left: nothing; no limit any more: everything, oldest first.
  const none = await index.claim(0, now, now + 5_000, 100, 30_000, [{ ...rate[0]!, allowance: 0 }]);
  expect(!none.epochMissing && none.claimed).toEqual([]);
  const all = await index.claim(0, now, now + 5_000, 100, 30_000);
  if (all.epochMissing) throw new Error("epoch missing");
  expect(all.claimed.map((c) => c.member)).toEqual(["e0", "e1", "e2"].map((id) => memberOf("t", id)));
  expect(await index.heldCounts(0)).toEqual({});
  expect(await index.heldGroups(0)).toEqual([]);
});

it("admits, frees, takes creates and computes allowances on the tenant's slot", async () => {
  const config = loadConfig(
    {},
    {
      HOURGLASS_KEY_PREFIX: "hgf",
      HOURGLASS_TENANT_MAX_RUNNING: "1",
      HOURGLASS_TENANT_CREATES_PER_SECOND: "1",
      HOURGLASS_TENANT_CREATES_BURST: "500",
    },
  );
  const flow = new FlowControl(client, config, undefined, Date.now);
  const a = { tenant: "t", type: "x", member: "t/a" };
  const b = { tenant: "t", type: "y", member: "t/b" };
  expect(await flow.admit([a, b])).toEqual([
    { admitted: true },
    { admitted: false, reason: "concurrency", retryAfterMs: 0 },
  ]);
  expect(await flow.allowances(["t|y"])).toEqual([{ group: "t|y", allowance: 0, reason: "concurrency" }]);
  await flow.free([a]);
  expect(await flow.admit([b])).toEqual([{ admitted: true }]);
  await flow.takeCreates("t", 500);
  await expect(flow.takeCreates("t", 1)).rejects.toThrow(/per second/);
});
