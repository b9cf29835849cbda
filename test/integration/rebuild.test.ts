import { setTimeout as sleep } from "node:timers/promises";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { EventJournal } from "../../shared/journal/journal.ts";
import { captured, engine, freshTenant, intercept } from "../support/engine.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { type RedisServer, startRedisServer } from "../support/redis-servers.ts";

/**
 * Rebuild after Redis lost everything (issue 8 §3): a big shard is rebuilt a page at a time,
 * within each tick's budget, from a cursor kept in Redis, and what is already restored is
 * dispatched while the rest is still being read. This file runs its own redis-server, so it can
 * flush it without touching anyone else's data.
 */
const rec = recorder();
let redis: RedisServer;
let hg: TestHourglass;

beforeAll(async () => {
  redis = await startRedisServer();
  hg = await testHourglass(
    {
      HOURGLASS_REDIS_URL: redis.url,
      HOURGLASS_SHARDS: "1",
      HOURGLASS_SHARD_GROUPS: "1",
      // A horizon beyond the 30-day events, so the whole shard is near and comes back page by page
      // (horizon-flushall.test.ts shows the default: only the near horizon comes back).
      HOURGLASS_INDEX_HORIZON_SECONDS: String(40 * 86_400),
    },
    { handlers: [rec.handler] },
  );
});

afterAll(async () => {
  await hg?.destroy();
  await redis?.kill();
});

it("a big shard is rebuilt a page per step within the tick's budget, resumes from its cursor, and dispatches what is restored meanwhile", async () => {
  const tenant = freshTenant("rebuild");
  const far = Array.from({ length: 1_200 }, (_, i) => ({
    id: `far-${i}`,
    type: "test.record",
    payload: {},
    delaySeconds: 30 * 86_400 + i,
  }));
  for (let i = 0; i < far.length; i += 500) {
    const results = await hg.events.scheduleBatch(tenant, far.slice(i, i + 500));
    expect(results.every((r) => r.ok)).toBe(true);
  }
  await hg.events.schedule(tenant, { id: "soon", type: "test.record", payload: {}, delaySeconds: 2 });

  await (hg.redis as Redis).flushall();

  // Each journal page takes a while, as it does on a big shard in DynamoDB.
  let pages = 0;
  const slow = intercept(hg.journal!, "pending", async (original, ...args) => {
    // Rebuild reads are bounded by the near horizon, ahead of now (the recovery sweep's by now).
    if ((args[1] as number) > Date.now()) pages++;
    await sleep(400);
    return original(...args);
  }) as EventJournal;

  const first = captured();
  const { dispatcher } = engine(hg, { journal: slow, transport: first.transport });
  await dispatcher.tick(600);
  // The tick kept to its budget instead of reading all three pages first...
  expect(pages).toBeLessThan(3);
  expect(await hg.index.rebuildCursor(0)).toBeDefined();
  // ...and the event due soon, restored from the first page, was sent in that same tick.
  expect(first.messages.map((m) => m.member)).toContain(`${tenant}/soon`);

  // A fresh dispatcher (the next Lambda) resumes from the cursor instead of starting over.
  const next = engine(hg, { journal: slow, transport: captured().transport }).dispatcher;
  for (let tick = 0; tick < 10 && (await hg.index.rebuildCursor(0)) !== undefined; tick++)
    await next.tick(600);
  expect(await hg.index.rebuildCursor(0)).toBeUndefined();
  expect(pages).toBe(3);
  expect(await hg.index.hasEpoch(0)).toBe(true);
  const stats = await hg.events.stats(tenant);
  expect(stats.indexSize).toBe(1_201);
});
