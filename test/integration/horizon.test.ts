import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { HorizonStore } from "../../shared/engine/horizon-state.ts";
import { memberOf, tenantDueKey } from "../../shared/engine/keys.ts";
import { restoreEntryOf } from "../../shared/events/entries.ts";
import { HORIZON_MARGIN_MS, HorizonLoader, type LoaderReport } from "../../shared/events/horizon.ts";
import type { JournalItem } from "../../shared/journal/item.ts";
import type { EventJournal } from "../../shared/journal/journal.ts";
import { Crash, captured, crashOn, engine, freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Redis holds only the near future (issue 13 §4, docs/horizon.md): events due beyond the near
 * horizon live in the journal only, and the dispatcher's loader promotes them ahead of time, in due
 * order, resumably. One shard, a 3-second horizon (look-ahead 1 s, ticks of 200 ms), so an event
 * goes from far to near in seconds.
 */
const rec = recorder();
let hg: TestHourglass;
const HORIZON_MS = 3_000;
/** Far by every clock: beyond the horizon, its margin and a second of slack. */
const FAR_MS = HORIZON_MS + HORIZON_MARGIN_MS + 1_000;

beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_SHARDS: "1",
      HOURGLASS_SHARD_GROUPS: "1",
      HOURGLASS_LOOKAHEAD_SECONDS: "1",
      HOURGLASS_TICK_MS: "200",
      HOURGLASS_INDEX_HORIZON_SECONDS: String(HORIZON_MS / 1000),
    },
    { handlers: [rec.handler] },
  );
  await hg.index.setEpoch(0, "1");
});
afterAll(async () => {
  await hg?.destroy();
});

const store = () => new HorizonStore(hg.index);
const inIndex = async (tenant: string, id: string) =>
  (await hg.redis.hexists(hg.index.keys(0).body, memberOf(tenant, id))) === 1;
const restoreWith = (items: readonly JournalItem[]) =>
  hg.index.restore(items.map(restoreEntryOf), Date.now());
const report = (): LoaderReport => ({ promoted: 0, swept: 0, failedShards: [] });

/** Waits until the loader's target (now + horizon) has passed `runAt`, so a sweep reaches it. */
async function untilNear(runAt: number) {
  const wait = runAt - HORIZON_MS - Date.now() + 50;
  if (wait > 0) await sleep(wait);
}

describe("create, reschedule and cancel against the near horizon", () => {
  it("indexes a near event, leaves a far one to the journal, and reads both the same way", async () => {
    const tenant = freshTenant("hz");
    await hg.events.schedule(tenant, { id: "near", type: "test.record", payload: {}, delaySeconds: 2 });
    const farInput = {
      id: "far",
      type: "test.record",
      payload: {},
      runAt: new Date(Date.now() + 86_400_000).toISOString(),
    };
    const far = await hg.events.schedule(tenant, farInput);
    expect(far.outcome).toBe("created");
    expect(await inIndex(tenant, "near")).toBe(true);
    expect(await inIndex(tenant, "far")).toBe(false);
    expect(await hg.redis.zscore(hg.index.keys(0).due, memberOf(tenant, "far"))).toBeNull();
    expect(await hg.redis.hexists(hg.index.keys(0).meta, memberOf(tenant, "far"))).toBe(0);
    const read = await hg.events.get(tenant, "far");
    expect(read.status).toBe("scheduled");
    expect(read.runAt).toBe(far.event.runAt);
    // The same id again is the same event, and still costs Redis nothing.
    const again = await hg.events.schedule(tenant, farInput);
    expect(again.outcome).toBe("existing");
    expect(await inIndex(tenant, "far")).toBe(false);
  });

  it("a batch splits near and far by each event's due time", async () => {
    const tenant = freshTenant("hzb");
    const results = await hg.events.scheduleBatch(
      tenant,
      Array.from({ length: 10 }, (_, i) => ({
        id: `b${i}`,
        type: "test.record",
        payload: {},
        delaySeconds: i % 2 === 0 ? 2 : 3_600 + i,
      })),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    for (let i = 0; i < 10; i++) expect(await inIndex(tenant, `b${i}`)).toBe(i % 2 === 0);
  });

  it("a reschedule moves an event between near and far: far goes out of the index, near comes in", async () => {
    const tenant = freshTenant("hzr");
    await hg.events.schedule(tenant, { id: "e", type: "test.record", payload: {}, delaySeconds: 2 });
    expect(await inIndex(tenant, "e")).toBe(true);
    const moved = await hg.events.reschedule(tenant, "e", { delaySeconds: 7_200 });
    expect(moved.status).toBe("scheduled");
    expect(await inIndex(tenant, "e")).toBe(false);
    const item = (await hg.journal!.get(tenant, "e"))!;
    expect(item.runAt).toBe(moved.runAt);
    // Far to far: the journal only.
    await hg.events.reschedule(tenant, "e", { delaySeconds: 9_000 });
    expect(await inIndex(tenant, "e")).toBe(false);
    // Far to near: indexed at once, under the journal's version.
    const back = await hg.events.reschedule(tenant, "e", { delaySeconds: 2 });
    expect(await inIndex(tenant, "e")).toBe(true);
    const live = (await hg.index.inspect(memberOf(tenant, "e")))!;
    expect(live.runAt).toBe(back.runAt);
    expect((await hg.journal!.get(tenant, "e"))!.runAt).toBe(back.runAt);
  });

  it("an eviction never takes an entry a newer reschedule moved back near", async () => {
    const tenant = freshTenant("hzv");
    await hg.events.schedule(tenant, { id: "v", type: "test.record", payload: {}, delaySeconds: 2 });
    const member = memberOf(tenant, "v");
    const farAt = Date.now() + 7_200_000;
    const first = await hg.index.reschedule(member, farAt, Date.now(), 0, 30_000);
    expect(first.code).toBe(ScriptCode.SCHEDULED);
    // A second reschedule (back near) lands before the first one's eviction.
    await hg.index.reschedule(member, Date.now() + 2_000, Date.now(), 0, 30_000);
    const version = first.code === ScriptCode.SCHEDULED ? first.version : -1;
    const nearMs = HORIZON_MS + HORIZON_MARGIN_MS;
    expect(await store().evict(member, version, Date.now(), nearMs)).toBe(false);
    expect(await inIndex(tenant, "v")).toBe(true);
  });

  it("cancelling a far event writes the journal, and the loader never brings it back", async () => {
    const tenant = freshTenant("hzc");
    const runAt = Date.now() + FAR_MS;
    await hg.events.schedule(tenant, {
      id: "c",
      type: "test.record",
      payload: {},
      runAt: new Date(runAt).toISOString(),
    });
    // A loader read the item while it was pending...
    const stale = (await hg.journal!.get(tenant, "c"))!;
    const cancelled = await hg.events.cancel(tenant, "c");
    expect(cancelled.status).toBe("cancelled");
    expect((await hg.journal!.get(tenant, "c"))!.status).toBe("cancelled");
    // ...and promotes it after the cancel: the tombstone refuses it.
    expect(await restoreWith([stale])).toEqual([ScriptCode.TOMBSTONED]);
    expect(await inIndex(tenant, "c")).toBe(false);
  });

  it("a cancel of an id that does not exist yet never cancels the event created under it later", async () => {
    const tenant = freshTenant("hzt");
    await expect(hg.events.cancel(tenant, "later")).rejects.toThrow();
    await expect(hg.events.cancel(tenant, "near")).rejects.toThrow();
    const runAt = Date.now() + FAR_MS;
    await hg.events.schedule(tenant, {
      id: "later",
      type: "test.record",
      payload: {},
      runAt: new Date(runAt).toISOString(),
    });
    await hg.events.schedule(tenant, { id: "near", type: "test.record", payload: {}, delaySeconds: 3 });
    // The loader's restores (and any sweep's) pass over both: neither is taken for cancelled.
    const items = [(await hg.journal!.get(tenant, "later"))!, (await hg.journal!.get(tenant, "near"))!];
    expect(await restoreWith(items)).toEqual([ScriptCode.RESTORED, ScriptCode.PRESENT]);
    expect((await hg.journal!.get(tenant, "later"))!.status).toBe("scheduled");
    expect((await hg.journal!.get(tenant, "near"))!.status).toBe("scheduled");
  });
});

describe("stats beside the near horizon", () => {
  it("counts far events from the journal, each once, in byStatus and byType, and not after a cancel or once near", async () => {
    const tenant = freshTenant("hzstats");
    const at = (ms: number) => new Date(Date.now() + ms).toISOString();
    await hg.events.schedule(tenant, { id: "near", type: "test.record", payload: {}, delaySeconds: 2 });
    await hg.events.schedule(tenant, { id: "far1", type: "test.record", payload: {}, runAt: at(86_400_000) });
    await hg.events.schedule(tenant, {
      id: "far2",
      type: "test.record",
      payload: {},
      runAt: at(2 * 86_400_000),
    });
    const first = await hg.events.stats(tenant);
    expect(first).toMatchObject({ farPending: 2, farTruncated: false, indexSize: 1 });
    expect(first.byStatus.scheduled).toBe(3);
    expect(first.byType["test.record"]?.scheduled).toBe(3);

    await hg.events.cancel(tenant, "far1");
    const cancelled = await hg.events.stats(tenant);
    expect(cancelled).toMatchObject({ farPending: 1, indexSize: 1 });
    expect(cancelled.byStatus).toMatchObject({ scheduled: 2, cancelled: 1 });
    // The same cancel again answers the cancelled event and counts nothing more.
    expect((await hg.events.cancel(tenant, "far1")).status).toBe("cancelled");
    expect((await hg.events.stats(tenant)).byStatus).toMatchObject({ scheduled: 2, cancelled: 1 });

    // Rescheduled near: the index holds it now, and it is counted there, not twice.
    await hg.events.reschedule(tenant, "far2", { delaySeconds: 2 });
    const near = await hg.events.stats(tenant);
    expect(near).toMatchObject({ farPending: 0, indexSize: 2 });
    expect(near.byStatus.scheduled).toBe(2);
    // Another tenant's far events are not this one's.
    expect((await hg.events.stats(freshTenant("hzother"))).farPending).toBe(0);
  });
});

describe("the loader", () => {
  it("promotes far events as they come near, in due order, and the dispatcher sends them on time", async () => {
    const tenant = freshTenant("hzl");
    const base = Date.now() + FAR_MS;
    const ids = ["l0", "l1", "l2"];
    // Created out of order: the loader reads the journal's pending index in due order.
    for (const [i, id] of [...ids.entries()].reverse()) {
      await hg.events.schedule(tenant, {
        id,
        type: "test.record",
        payload: {},
        runAt: new Date(base + i * 300).toISOString(),
      });
    }
    for (const id of ids) expect(await inIndex(tenant, id)).toBe(false);
    const { messages, transport } = captured();
    const { dispatcher } = engine(hg, { transport });
    await dispatcher.tick(1_000);
    for (const id of ids) expect(await inIndex(tenant, id)).toBe(false);
    await untilNear(base + 600);
    await dispatcher.tick(1_000);
    const due = await hg.redis.zrange(tenantDueKey(hg.config.keyPrefix, 0, tenant), 0, -1);
    expect(due).toEqual(ids);
    const state = await store().state(0);
    expect(state.loaded).toBeGreaterThanOrEqual(base + 600);
    expect(state.sweep).toBeUndefined();
    await eventually(
      async () => {
        await dispatcher.tick(500);
        return messages.filter((m) => m.member.startsWith(`${tenant}/`)).length === 3 ? true : undefined;
      },
      10_000,
      "all three to be sent",
    );
    const sent = messages.filter((m) => m.member.startsWith(`${tenant}/`));
    expect(sent.map((m) => m.member)).toEqual(ids.map((id) => memberOf(tenant, id)));
    for (const [i, m] of sent.entries()) expect(m.runAt).toBe(base + i * 300);
  });

  it("survives a crash between the query and the promotion, and between the promotion and the watermark", async () => {
    const tenant = freshTenant("hzk");
    const runAt = Date.now() + FAR_MS;
    await hg.events.schedule(tenant, {
      id: "k",
      type: "test.record",
      payload: {},
      runAt: new Date(runAt).toISOString(),
    });
    // Bring the watermark up to now first, so the crashing sweeps below are the ones that pass k.
    await new HorizonLoader(engine(hg).deps, restoreWith).run(Date.now() + 2_000);
    const before = (await store().state(0)).loaded!;
    expect(before).toBeLessThan(runAt);
    await untilNear(runAt);

    // 1. Dies after reading the journal, before promoting anything.
    const deadQuery = new HorizonLoader(
      engine(hg, { journal: crashOn(hg.journal!, "pendingBetween", "after") as EventJournal }).deps,
      restoreWith,
    );
    await expect(deadQuery.shard(0, Date.now() + 2_000, report())).rejects.toBeInstanceOf(Crash);
    expect(await inIndex(tenant, "k")).toBe(false);
    expect((await store().state(0)).loaded).toBe(before);

    // 2. Dies after promoting, before the watermark moves.
    const deadMark = new HorizonLoader(
      engine(hg).deps,
      restoreWith,
      crashOn(store(), "finishSweep", "before"),
    );
    await expect(deadMark.shard(0, Date.now() + 2_000, report())).rejects.toBeInstanceOf(Crash);
    expect(await inIndex(tenant, "k")).toBe(true);
    expect((await store().state(0)).loaded).toBe(before);

    // The next loader repeats the sweep: the promotion again is harmless, the watermark moves.
    const next = report();
    await new HorizonLoader(engine(hg).deps, restoreWith).shard(0, Date.now() + 2_000, next);
    expect(next.promoted).toBe(0);
    expect((await store().state(0)).loaded).toBeGreaterThanOrEqual(runAt);
    const live = (await hg.index.inspect(memberOf(tenant, "k")))!;
    expect(live.runAt).toBe(runAt);
    expect(live.status).toBe("scheduled");
  });

  it("pages a big sweep within its deadline and resumes it from the saved cursor, even after a crash", async () => {
    const tenant = freshTenant("hzp");
    // Every event must still be far when it is written, or the create indexes it itself and the
    // sweep below finds less to promote: far and near are judged by the later of the caller's and
    // Redis's clocks, so only a margin protects it. Generated ids go out in BatchWriteItem
    // requests of 25 (a second or two for all 1,100 here), and the margin covers 10 s of writes.
    const base = Date.now() + FAR_MS + 10_000;
    const events = Array.from({ length: 1_100 }, (_, i) => ({
      type: "test.record",
      payload: {},
      runAt: new Date(base + (i % 50)).toISOString(),
    }));
    for (let i = 0; i < events.length; i += 500) {
      const results = await hg.events.scheduleBatch(tenant, events.slice(i, i + 500));
      expect(results.every((r) => r.ok)).toBe(true);
    }
    await new HorizonLoader(engine(hg).deps, restoreWith).run(Date.now() + 2_000);
    await untilNear(base + 50);
    const count = async () => hg.redis.zcard(tenantDueKey(hg.config.keyPrefix, 0, tenant));

    // A deadline already spent: one page, then the sweep is saved for the next tick.
    const first = report();
    await new HorizonLoader(engine(hg).deps, restoreWith).shard(0, 0, first);
    expect(first.promoted).toBe(500);
    const saved = (await store().state(0)).sweep!;
    expect(saved.target).toBeGreaterThanOrEqual(base + 50);

    // The next page's progress is lost in a crash before it is saved...
    const crashing = new HorizonLoader(engine(hg).deps, restoreWith, crashOn(store(), "saveSweep", "before"));
    await expect(crashing.shard(0, 0, report())).rejects.toBeInstanceOf(Crash);
    expect((await store().state(0)).sweep).toEqual(saved);
    expect(await count()).toBe(1_000);

    // ...so the resume repeats that page (harmlessly) and finishes the sweep at its target.
    const resumed = report();
    await new HorizonLoader(engine(hg).deps, restoreWith).shard(0, Date.now() + 5_000, resumed);
    expect(resumed.promoted).toBe(100);
    expect(await count()).toBe(1_100);
    const state = await store().state(0);
    expect(state.sweep).toBeUndefined();
    expect(state.loaded).toBe(saved.target);
  });
});
