import type { ChildProcess } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { type FlowRun, flowHandler, flowRuns, startFlowChild } from "../support/flow-child-process.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Pause and resume with a kill -9 in between: a real process (test/support/flow-child.ts) runs the
 * dispatcher and worker while a type is rate-limited, then paused, and is killed with SIGKILL in
 * the middle of running events. A fresh process resumes the type: every event runs, none early,
 * the ones that were held back run in due order, and the dead process's slots come back.
 */

let hg: TestHourglass;
let runsKey: string;
let child: ChildProcess | undefined;

const record = flowHandler(() => ({ redis: hg.redis, runsKey }), { work: false });

const ENV = {
  // One shard: due order is then one sorted set's order, which the test can check exactly.
  HOURGLASS_SHARDS: "1",
  HOURGLASS_SHARD_GROUPS: "1",
  HOURGLASS_HANDLER_TIMEOUT_SECONDS: "1",
  HOURGLASS_RUN_LEASE_MARGIN_MS: "200",
  HOURGLASS_DISPATCH_LEASE_SECONDS: "2",
};

beforeAll(async () => {
  hg = await testHourglass(ENV, { handlers: [record] });
  runsKey = `{${hg.config.keyPrefix}:test}:runs`;
});
afterAll(async () => {
  if (child?.exitCode === null) child.kill("SIGKILL");
  await hg.destroy();
});

async function runs(): Promise<FlowRun[]> {
  return flowRuns(hg, runsKey);
}

describe("pause, kill -9, resume", () => {
  it("loses nothing, starts nothing early, and runs the held-back events in due order", async () => {
    const tenant = freshTenant("kill");
    const count = 40;
    await hg.flow.put(tenant, "test.flow", { ratePerSecond: 4, burst: 2, maxConcurrency: 2 });
    const base = Date.now() + 500;
    const results = await hg.events.scheduleBatch(
      tenant,
      Array.from({ length: count }, (_, i) => ({
        id: `e${String(i).padStart(2, "0")}`,
        type: "test.flow",
        // Work long enough that the kill lands while some are running.
        payload: { workMs: 400 },
        runAt: new Date(base + i * 50).toISOString(),
      })),
    );
    expect(results.every((r) => r.ok)).toBe(true);

    child = await startFlowChild(hg, ENV, runsKey);
    // Let it run a few under the limits, then pause while it is busy, then kill -9.
    await eventually(
      async () => ((await runs()).length >= 3 ? true : undefined),
      15_000,
      "a few runs in the child",
    );
    await hg.flow.put(tenant, "test.flow", { paused: true, ratePerSecond: 4, burst: 2, maxConcurrency: 2 });
    await sleep(300);
    child.kill("SIGKILL");
    await new Promise((done) => child!.once("exit", done));
    const beforeKill = await runs();
    expect(beforeKill.length).toBeGreaterThan(0);
    expect(beforeKill.length).toBeLessThan(count);

    // Paused: the held-back events are said to be held, and nothing runs.
    const stats = await hg.events.stats(tenant);
    expect(stats.heldBy.paused ?? 0).toBeGreaterThan(0);
    expect(stats.oldestOverdueMs).toBeLessThan(5_000);
    // Which events the index held back, as against those the dead process had already handed to
    // the queue: a queued message is delivered when its delay ends, whatever the due order of the
    // held ones, so only the held ones have an order to keep.
    const views = await Promise.all(
      results.map((r) => (r.ok ? hg.events.get(tenant, r.event.id) : Promise.reject(r.error))),
    );
    const held = new Set(views.filter((v) => v.heldBy !== undefined).map((v) => v.id));
    expect(held.size).toBe(stats.heldBy.paused);

    // A fresh process; resume with only a concurrency limit, so due order is visible.
    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await sleep(500);
      expect((await runs()).length).toBe(beforeKill.length);
      await hg.flow.put(tenant, "test.flow", { maxConcurrency: 1 });
      await eventually(
        async () => ((await hg.events.stats(tenant)).byStatus.succeeded === count ? true : undefined),
        30_000,
        "every event succeeded after the resume",
      );
    } finally {
      await runtime.stop();
    }

    const all = await runs();
    const ids = new Set(all.map((r) => r.id));
    expect(ids.size).toBe(count);
    for (const run of all) expect(run.start).toBeGreaterThanOrEqual(run.runAt);
    // Held back at the kill and run after it: in due order, one at a time.
    const after = all.filter((r) => r.pid === process.pid && held.has(r.id));
    expect(after).toHaveLength(held.size);
    const order = after.map((r) => r.runAt);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    // The killed process's slots came back (expired), and nothing holds one now.
    expect(await hg.redis.zcard(`{${hg.config.keyPrefix}:limits:${tenant}}:slots:test.flow`)).toBe(0);
    expect((await hg.events.stats(tenant)).heldBy).toEqual({});
  }, 60_000);
});
