import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { memberOf } from "../../shared/engine/keys.ts";
import { HORIZON_MARGIN_MS } from "../../shared/events/horizon.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { type RedisServer, startRedisServer } from "../support/redis-servers.ts";

/**
 * Redis loses everything (FLUSHALL) while near and far events are pending: the rebuild reloads
 * only the near horizon, and the far events, which only the journal holds, still run on time, once,
 * promoted by the loader when they come near. Its own redis-server, so the flush touches no one else.
 */
const rec = recorder();
let redis: RedisServer;
let hg: TestHourglass;
const HORIZON_MS = 3_000;

beforeAll(async () => {
  redis = await startRedisServer();
  hg = await testHourglass(
    {
      HOURGLASS_REDIS_URL: redis.url,
      HOURGLASS_SHARDS: "2",
      HOURGLASS_SHARD_GROUPS: "1",
      HOURGLASS_LOOKAHEAD_SECONDS: "1",
      HOURGLASS_TICK_MS: "200",
      HOURGLASS_INDEX_HORIZON_SECONDS: String(HORIZON_MS / 1000),
    },
    { handlers: [rec.handler] },
  );
});
afterAll(async () => {
  await hg?.destroy();
  await redis?.kill();
});

it("a rebuild after FLUSHALL reloads only the near horizon, and far events still run on time, once", async () => {
  const tenant = freshTenant("flush");
  const now = Date.now();
  const nearAt = now + 2_500;
  const farAt = now + HORIZON_MS + HORIZON_MARGIN_MS + 3_000;
  const near = Array.from({ length: 20 }, (_, i) => ({ id: `n${i}`, runAt: nearAt + i * 10 }));
  const far = Array.from({ length: 20 }, (_, i) => ({ id: `f${i}`, runAt: farAt + i * 10 }));
  const results = await hg.events.scheduleBatch(
    tenant,
    [...near, ...far].map((e) => ({
      ...e,
      type: "test.record",
      payload: {},
      runAt: new Date(e.runAt).toISOString(),
    })),
  );
  expect(results.every((r) => r.ok)).toBe(true);
  const indexed = async (id: string) =>
    (await hg.redis.hexists(
      hg.index.keys(hg.index.shardOf(memberOf(tenant, id))).body,
      memberOf(tenant, id),
    )) === 1;
  for (const e of far) expect(await indexed(e.id)).toBe(false);

  await (hg.redis as Redis).flushall();

  let restored = 0;
  for (let shard = 0; shard < hg.config.shards; shard++) restored += await hg.dispatcher.rebuild(shard);
  // Only the near horizon came back; the far events are still only in the journal.
  expect(restored).toBe(near.length);
  for (const e of near) expect(await indexed(e.id)).toBe(true);
  for (const e of far) expect(await indexed(e.id)).toBe(false);
  for (let shard = 0; shard < hg.config.shards; shard++) {
    const loaded = Number(await hg.redis.hget(hg.index.keys(shard).horizon, "loaded"));
    // The rebuild's watermark: now plus the horizon, short of the far events.
    expect(loaded).toBeGreaterThanOrEqual(now + HORIZON_MS);
    expect(loaded).toBeLessThan(farAt);
  }

  const runtime = startRuntime(hg, { tickMs: 200 });
  try {
    await eventually(
      async () => ([...near, ...far].every((e) => rec.runsOf(e.id).length > 0) ? true : undefined),
      farAt - Date.now() + 10_000,
      "every event to run",
    );
  } finally {
    await runtime.stop();
  }
  for (const e of [...near, ...far]) {
    const runs = rec.runsOf(e.id);
    expect(runs, e.id).toHaveLength(1);
    expect(runs[0]!.startedAt).toBeGreaterThanOrEqual(e.runAt);
    expect(runs[0]!.runAt).toBe(e.runAt);
  }
}, 60_000);
