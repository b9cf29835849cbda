import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memberOf } from "../../shared/engine/keys.ts";
import { readTimeline, SCAN_LIMIT_PER_SHARD } from "../../shared/metrics-store/timeline.ts";
import { captured, freshTenant } from "../support/engine.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";
import { type RedisServer, startRedisServer } from "../support/redis-servers.ts";

/**
 * A tenant's stats and timeline cost its own events and show only its own (issue 33, findings 10
 * and 11; invariant 7). Beside another tenant's large backlog on the same shard, a small tenant's
 * reads must do the same Redis work as on an empty shard, and show all of its events and nothing
 * of the other's. The work is counted with INFO commandstats (calls of the sorted-set range reads
 * and of all commands) on a redis-server of the file's own, never timed. Engine only: one shard,
 * journal off, no dispatcher running.
 */
let hg: TestHourglass;
// A redis-server of its own, so INFO commandstats counts this file's commands only.
let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
  hg = await testHourglass(
    { HOURGLASS_SHARDS: "1", HOURGLASS_JOURNAL: "false", HOURGLASS_REDIS_URL: server.url },
    // Nothing is sent in this file; a transport that keeps messages needs no queue.
    { transport: () => captured().transport },
  );
});
afterAll(async () => {
  await hg.destroy();
  await server.kill();
});

const BODY = "test.record\n{}";

async function index(tenant: string, n: number, runAt: (i: number) => number, id = "e") {
  for (let i = 0; i < n; i += 1_000) {
    const entries = Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({
      member: memberOf(tenant, `${id}${i + j}`),
      runAt: runAt(i + j),
      body: BODY,
    }));
    // dispatchUntil 0: nothing is claimed on the spot, so every event waits.
    await hg.index.schedule(entries, Date.now(), 0, 60_000);
  }
}

/** Redis commands run while `read` runs, by name (INFO commandstats, this test's own Redis). */
async function commandsOf(read: () => Promise<unknown>): Promise<Record<string, number>> {
  const stats = async () => {
    const info = await hg.redis.info("commandstats");
    const calls: Record<string, number> = {};
    for (const match of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) calls[match[1]!] = Number(match[2]);
    return calls;
  };
  const before = await stats();
  await read();
  const after = await stats();
  const delta: Record<string, number> = {};
  for (const [name, n] of Object.entries(after))
    if (n - (before[name] ?? 0) > 0) delta[name] = n - (before[name] ?? 0);
  // The two INFO calls themselves.
  delta.info = (delta.info ?? 0) - 1;
  if (delta.info <= 0) delete delta.info;
  return delta;
}

const ranges = (calls: Record<string, number>) =>
  (calls.zrangebyscore ?? 0) + (calls.zrange ?? 0) + (calls.zrevrangebyscore ?? 0);

describe("a tenant's reads beside another tenant's backlog", () => {
  it("stats: the small tenant's oldest overdue is its own, and costs the same commands beside 30,000 overdue of another tenant as on an empty shard", async () => {
    const small = freshTenant("small");
    const idle = freshTenant("idle");
    const now = Date.now();
    await index(small, 3, () => now - 5_000);
    const alone = await commandsOf(() => hg.events.stats(small));
    const idleAlone = await commandsOf(() => hg.events.stats(idle));

    const big = freshTenant("big");
    // Due before the small tenant's, so a scan of the shard's overdue range meets them first.
    await index(big, 30_000, () => now - 60_000);
    const beside = await commandsOf(() => hg.events.stats(small));
    const idleBeside = await commandsOf(() => hg.events.stats(idle));
    console.log(`stats commands: alone ${JSON.stringify(alone)}, beside ${JSON.stringify(beside)}`);
    expect(beside).toEqual(alone);
    expect(idleBeside).toEqual(idleAlone);
    expect(ranges(beside)).toBeLessThanOrEqual(8);

    const mine = await hg.events.stats(small);
    expect(mine.oldestOverdueMs).toBeGreaterThanOrEqual(5_000);
    expect(mine.oldestOverdueMs).toBeLessThan(60_000);
    expect(mine.byStatus).toEqual({ scheduled: 3 });
    expect((await hg.events.stats(idle)).oldestOverdueMs).toBe(0);
    expect((await hg.events.stats(big)).oldestOverdueMs).toBeGreaterThanOrEqual(60_000);
  }, 120_000);

  it("timeline: the small tenant sees all its events, untruncated, beside more than a scan's worth of another tenant's, and nothing of them", async () => {
    const small = freshTenant("tsmall");
    const big = freshTenant("tbig");
    const now = Date.now();
    // The large tenant's events are due first within the hour, more than one shard's scan limit.
    await index(big, SCAN_LIMIT_PER_SHARD + 2_000, (i) => now + 60_000 + (i % 1_000));
    await index(small, 40, (i) => now + 600_000 + i * 1_000);
    await index(small, 5, () => now - 1_000, "late");
    const timeline = await readTimeline(hg.index, small, Date.now(), "hour");
    expect(timeline.truncated).toBe(false);
    expect(Object.keys(timeline.types)).toEqual(["test.record"]);
    expect(timeline.types["test.record"]!.reduce((a, b) => a + b, 0)).toBe(40);
    expect(timeline.overdue).toEqual({ "test.record": 5 });
    // The large tenant's own volume truncates its own timeline only.
    expect((await readTimeline(hg.index, big, Date.now(), "hour")).truncated).toBe(true);
    // The small tenant's read costs its own events: as many range reads as alone.
    const cost = await commandsOf(() => readTimeline(hg.index, small, Date.now(), "hour"));
    expect(ranges(cost)).toBe(1);
  }, 120_000);
});
