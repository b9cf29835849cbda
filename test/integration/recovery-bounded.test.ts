import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setDispatchPaused } from "../../shared/events/pause.ts";
import { RecoverySweep } from "../../shared/events/recovery.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { Crash, crashOn, engine, freshTenant, intercept } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Issue 33, finding 1: the recovery sweep ran inside the dispatcher's tick, unbounded, and read
 * every overdue pending journal item of every shard each period, a held backlog (a paused type)
 * included: one tenant's backlog stalled every tenant's claims. Now the sweep steps beside the
 * claims, bounded per call, resumes where it stopped (from any dispatcher), and reads a backlog it
 * verified once only. HELD events of a paused type, overdue, on the real stack.
 */
const HELD = Number(process.env.RECOVERY_HELD ?? 15_000);
/** How long each page of the journal's pending index takes to answer in the lateness test. */
const SLOW_PAGE_MS = 2_000;
const held = recorder("test.held");
const other = recorder("test.record");

let hg: TestHourglass;
const heldTenant = freshTenant("held");
const heldIds: string[] = [];
/** The held backlog's due times: a minute ago, a millisecond apart. */
const backlogStart = Date.now() - 60_000;

beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_RECOVERY_GRACE_SECONDS: "1",
      HOURGLASS_RECOVERY_EVERY_SECONDS: "1",
      HOURGLASS_LOOKAHEAD_SECONDS: "1",
    },
    { handlers: [held.handler, other.handler] },
  );
  await hg.flow.put(heldTenant, "test.held", { paused: true });
  // Created while dispatch is paused, so none goes straight to the queue: all wait in the index,
  // where the first claims park them (the type is paused), pending in the journal.
  await setDispatchPaused(hg.redis, hg.config.keyPrefix, true);
  for (let i = 0; i < HELD; i += 500) {
    const batch = Array.from({ length: Math.min(500, HELD - i) }, (_, j) => ({
      id: `h${i + j}`,
      type: "test.held",
      payload: {},
      runAt: new Date(backlogStart + i + j).toISOString(),
    }));
    const results = await hg.events.scheduleBatch(heldTenant, batch);
    expect(results.every((r) => r.ok)).toBe(true);
    heldIds.push(...batch.map((e) => e.id));
  }
  await setDispatchPaused(hg.redis, hg.config.keyPrefix, false);
}, 300_000);

afterAll(async () => {
  await hg?.destroy();
});

/** Frees the period's throttle, so the next step starts a round at once. */
async function periodDue() {
  await hg.redis.del(`${hg.config.keyPrefix}:recovery-throttle`);
}

describe("the recovery sweep beside a held backlog", () => {
  it(`another tenant's events start within normal lateness beside ${HELD} held overdue events`, async () => {
    const tenant = freshTenant("other");
    const tickTimes: number[] = [];
    const tick = hg.dispatcher.tick.bind(hg.dispatcher);
    hg.dispatcher.tick = async (budgetMs: number) => {
      const started = performance.now();
      try {
        return await tick(budgetMs);
      } finally {
        tickTimes.push(performance.now() - started);
      }
    };
    // Every page of the journal's pending index answers slowly (a DynamoDB on its bad day, or a
    // 2-core machine shared by other runs): a sweep on the claim path then holds the claims for
    // seconds a page, 30 pages a round, while a sweep beside them costs the claims nothing. The
    // bound below is normal lateness with room for a loaded machine; a stalled claim path exceeds
    // it many times over, whatever the machine's load.
    const journal = hg.journal! as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const slowed = ["pending", "pendingBetween"].filter((name) => typeof journal[name] === "function");
    for (const name of slowed) {
      const original = journal[name]!.bind(journal);
      // Only the sweep's reads (pages of what is already overdue), not the horizon loader's (ahead).
      const upTo = (args: unknown[]) => (name === "pending" ? args[1] : args[2]);
      journal[name] = async (...args: unknown[]) => {
        const until = upTo(args);
        if (typeof until === "number" && until < Date.now()) {
          await new Promise((done) => setTimeout(done, SLOW_PAGE_MS));
        }
        return original(...args);
      };
    }
    const runtime = startRuntime(hg, { tickMs: 200 });
    try {
      // The first claims park the held backlog (claim work, not the sweep's): measured after it.
      await eventually(
        async () => {
          let parked = 0;
          for (let shard = 0; shard < hg.config.shards; shard++)
            for (const count of Object.values(await hg.index.heldCounts(shard))) parked += count;
          return parked >= HELD ? true : undefined;
        },
        // A precondition, not the property: on a loaded machine parking 15,000 takes a while.
        150_000,
        "the held backlog parked",
      );
      // Created ahead of the look-ahead, so each is claimed by a tick, not sent on create; spread
      // over 12 s, several sweep periods.
      const now = Date.now();
      const ids = Array.from({ length: 12 }, (_, i) => `o${i}`);
      await hg.events.scheduleBatch(
        tenant,
        ids.map((id, i) => ({
          id,
          type: "test.record",
          payload: {},
          runAt: new Date(now + 2_000 + i * 1_000).toISOString(),
        })),
      );
      for (const id of ids) {
        await eventually(async () => (other.runsOf(id).length > 0 ? true : undefined), 60_000, `${id} ran`);
      }
      const lateness = ids.map((id) => other.runsOf(id)[0]!.startedAt - other.runsOf(id)[0]!.runAt);
      console.log(
        `[recovery] ${HELD} held: other tenant's lateness (ms) ${lateness.join(", ")}; ` +
          `longest tick ${Math.round(Math.max(...tickTimes))} ms over ${tickTimes.length} ticks`,
      );
      for (const late of lateness) expect(late).toBeGreaterThanOrEqual(0);
      // The unbounded sweep held every claim for its whole read of the backlog: 30 slow pages, a
      // minute and more here, every period.
      expect(Math.max(...lateness)).toBeLessThan(10_000);
    } finally {
      await runtime.stop();
      hg.dispatcher.tick = tick;
      for (const name of slowed) delete journal[name];
    }
    expect(held.runs).toHaveLength(0);
  }, 300_000);

  it("is bounded per call, resumes across calls through every shard and expire(), and does not read a verified backlog again", async () => {
    const expired = new Set<number>();
    let read = 0;
    const index = intercept(hg.index, "expire", async (original, ...args) => {
      expired.add(args[0] as number);
      return original(...args);
    });
    const journal = intercept(hg.journal!, "pendingBetween", async (original, ...args) => {
      const page = (await original(...args)) as { items: unknown[] };
      read += page.items.length;
      return page;
    });
    const sweep = new RecoverySweep({ ...engine(hg).deps, index, journal });
    // Everything verified so far is forgotten: the next round reads the whole backlog again.
    for (let shard = 0; shard < hg.config.shards; shard++) await hg.redis.del(hg.index.keys(shard).recovery);
    await sweep.store.setRound(undefined);
    expired.clear();
    read = 0;
    await periodDue();
    // Each call gets a deadline already past: it does one page (500 journal items) and stops, so
    // the bound is counted, not timed (the times are printed for the report).
    const calls: number[] = [];
    const readPerCall: number[] = [];
    const rounds: (number | undefined)[] = [];
    do {
      const before = read;
      const started = performance.now();
      await sweep.step(Date.now());
      calls.push(performance.now() - started);
      readPerCall.push(read - before);
      rounds.push(await sweep.store.round());
    } while (rounds.at(-1) !== undefined && calls.length < 1_000);
    console.log(
      `[recovery] full pass over ${HELD} held: ${calls.length} calls, longest ${Math.round(Math.max(...calls))} ms, ` +
        `${Math.round(calls.reduce((a, b) => a + b, 0))} ms in all, ${read} items read`,
    );
    expect(rounds.at(-1)).toBeUndefined();
    expect(Math.max(...readPerCall)).toBeLessThanOrEqual(500);
    expect(read).toBeGreaterThanOrEqual(HELD);
    expect(calls.length).toBeGreaterThanOrEqual(HELD / 500);
    // Every shard was swept (the round went through them in order) and then expired.
    const swept = rounds.filter((r): r is number => r !== undefined && r >= 1 && r <= hg.config.shards);
    expect(new Set(swept).size).toBe(hg.config.shards);
    expect([...expired].sort((a, b) => a - b)).toEqual(Array.from({ length: hg.config.shards }, (_, s) => s));

    // The next period's round reads only what became overdue since: not the verified backlog.
    read = 0;
    expired.clear();
    await new Promise((done) => setTimeout(done, 1_100));
    await periodDue();
    const started = performance.now();
    await sweep.step(Date.now() + 5_000);
    console.log(`[recovery] next round: ${Math.round(performance.now() - started)} ms, ${read} items read`);
    expect(await sweep.store.round()).toBeUndefined();
    expect(read).toBe(0);
    expect(expired.size).toBe(hg.config.shards);
  }, 180_000);

  it("still recovers what the index really lost, below the watermark too, and starts over after a rebuild", async () => {
    const sweep = hg.dispatcher.recovery;
    // Verified up to about now less the grace, all shards.
    await sweep.recover();
    const tenant = freshTenant("lost");
    const now = Date.now();
    const crashed = engine(hg, { index: crashOn(hg.index, "schedule", "before") }).service;
    // A create whose index write never happened, due long ago (below the watermark) and soon.
    await expect(
      crashed.schedule(tenant, {
        id: "past",
        type: "test.record",
        payload: {},
        runAt: new Date(now - 600_000).toISOString(),
      }),
    ).rejects.toBeInstanceOf(Crash);
    await expect(
      crashed.schedule(tenant, {
        id: "soon",
        type: "test.record",
        payload: {},
        runAt: new Date(now + 500).toISOString(),
      }),
    ).rejects.toBeInstanceOf(Crash);
    // A cancel of a held event (below the watermark) that died before its journal write.
    const cancelled = heldIds[HELD - 1]!;
    const cancelling = engine(hg, { journal: crashOn(hg.journal!, "markCancelled", "before") }).service;
    await expect(cancelling.cancel(heldTenant, cancelled)).rejects.toBeInstanceOf(Crash);
    expect((await hg.journal!.get(heldTenant, cancelled))?.status).toBe("scheduled");

    await eventually(
      async () => {
        await periodDue();
        await sweep.step(Date.now() + 1_000);
        const past = await hg.index.inspect(`${tenant}/past`);
        const soon = await hg.index.inspect(`${tenant}/soon`);
        const item = await hg.journal!.get(heldTenant, cancelled);
        return past && soon && item?.status === "cancelled" ? true : undefined;
      },
      20_000,
      "the lost create (past and soon) indexed, and the crashed cancel finished",
    );

    // A rebuild (a new epoch) makes what was verified unknown: the watermark starts over.
    const shard = hg.index.shardOf(`${heldTenant}/${heldIds[0]}`);
    expect(
      (await sweep.store.state(shard, Date.now(), hg.config.recovery.reverifyMs))?.verified,
    ).toBeDefined();
    await hg.index.setEpoch(shard, `rebuilt at ${Date.now()}`);
    expect(
      (await sweep.store.state(shard, Date.now(), hg.config.recovery.reverifyMs))?.verified,
    ).toBeUndefined();
  }, 120_000);
});
