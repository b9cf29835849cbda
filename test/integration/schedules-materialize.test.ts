import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { parseOccurrenceId } from "../../shared/model/occurrence-id.ts";
import { between, evaluator } from "../../shared/schedules/evaluate.ts";
import { Materializer } from "../../shared/schedules/materializer.ts";
import { materializeHorizonMs } from "../../shared/schedules/service.ts";
import { ScheduleStore } from "../../shared/schedules/store.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Materialization on the real local stack with a steered clock: every instant makes exactly one
 * event whatever repeats, races or crashes happen, and pause, edit, delete, catchUp and overlap
 * behave as documented.
 */
const tenant = "acme";
const rec = recorder();
let hg: TestHourglass;
let now = Date.parse("2026-12-01T10:00:00.200Z");

beforeAll(async () => {
  hg = await testHourglass({}, { handlers: [rec.handler], clock: () => now });
});
afterAll(async () => {
  await hg.destroy();
});

const store = () => new ScheduleStore(hg.dynamo, hg.config.tables.schedules);
const materializer = () =>
  new Materializer({
    config: hg.config,
    store: store(),
    events: hg.events,
    leases: undefined,
    logger: hg.logger,
    clock: () => now,
    systemTenant: "~system",
  });

async function occurrencesOf(scheduleId: string) {
  const events = [];
  let cursor: string | undefined;
  do {
    const page = await hg.events.list(tenant, { scheduleId, limit: 100, cursor });
    events.push(...page.events);
    cursor = page.cursor;
  } while (cursor);
  return events.sort((a, b) => a.id.localeCompare(b.id));
}

const create = (id: string, body: Record<string, unknown>) =>
  hg.schedules!.create(tenant, { id, event: { type: "test.record", payload: {} }, ...body });

describe("exactly one event per instant", () => {
  it("survives a crash between the event and the advance, duplicate ticks and two materializers at once", async () => {
    const { schedule } = await create("every-second", { rate: "1 second" });
    const first = schedule.nextAt!;
    // A dispatcher creates the events, then dies before advancing nextAt.
    const crashed = materializer();
    const item = (await store().get(tenant, "every-second"))!;
    const plan = await crashed.plan(item, now);
    expect(plan.events.length).toBeGreaterThan(0);
    await hg.events.storeMany(plan.events);
    // The next tick runs twice over (a retry), beside a second dispatcher.
    await Promise.all([materializer().run(5_000), materializer().run(5_000), crashed.run(5_000)]);
    now += 3_000;
    await Promise.all([materializer().run(5_000), materializer().run(5_000)]);
    now += 2_500;
    await materializer().run(5_000);

    const events = await occurrencesOf("every-second");
    const instants = events.map((e) => parseOccurrenceId(e.id)!.occurrenceAt);
    const expected = between(
      evaluator({ rate: "1 second", timezone: "UTC", anchor: first }),
      first,
      now + materializeHorizonMs(hg.config),
      1_000,
    );
    expect(instants).toEqual(expected);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    for (const e of events) {
      expect(e.runAt).toBe(parseOccurrenceId(e.id)!.occurrenceAt);
      expect(e.status).toMatch(/scheduled|dispatched/);
    }
    const after = await hg.schedules!.get(tenant, "every-second");
    expect(after.occurrences).toBe(events.length);
    expect(after.nextAt).toBe(
      evaluator({ rate: "1 second", timezone: "UTC", anchor: first }).next(expected.at(-1)!),
    );
  });
});

describe("under the lease", () => {
  it("materializes with a fractional budget, as half of Lambda's odd remaining milliseconds gives", async () => {
    await create("odd-budget", { rate: "1 second" });
    const leased = new Materializer({
      config: hg.config,
      store: store(),
      events: hg.events,
      leases: hg.leases,
      logger: hg.logger,
      clock: () => now,
      systemTenant: "~system",
    });
    // The AWS-shaped run found it: a budget of 24,999.5 ms made the lease refuse its ttl, every such tick.
    const report = await leased.run(49_999 / 2);
    expect(report.materialized).toBeGreaterThan(0);
    expect((await occurrencesOf("odd-budget")).length).toBe(report.materialized);
  });
});

describe("pause, resume, edit and delete", () => {
  it("pause cancels the occurrences that have not started; resume continues under a new revision", async () => {
    await create("pausable", { rate: "1 second" });
    await materializer().run(5_000);
    const before = await occurrencesOf("pausable");
    expect(before.length).toBeGreaterThan(3);
    await hg.schedules!.pause(tenant, "pausable");
    const paused = await occurrencesOf("pausable");
    expect(paused.every((e) => e.status === "cancelled")).toBe(true);
    // A paused schedule materializes nothing.
    now += 2_000;
    await materializer().run(5_000);
    expect((await occurrencesOf("pausable")).length).toBe(before.length);
    const resumed = await hg.schedules!.resume(tenant, "pausable");
    expect(resumed.revision).toBe(3);
    await materializer().run(5_000);
    const fresh = (await occurrencesOf("pausable")).filter((e) => e.status !== "cancelled");
    expect(fresh.length).toBeGreaterThan(0);
    // A new revision of the same schedule: the revision changes in the ids, the incarnation does not.
    const incarnation = before[0]!.id.split(".").at(-1);
    expect(incarnation).toMatch(/^[0-9a-f]{12}$/);
    for (const e of fresh) expect(e.id).toMatch(new RegExp(`~3\\.${incarnation}$`));
  });

  it("an edit cancels the old revision's unstarted occurrences and materializes the new one's", async () => {
    await create("editable", { rate: "2 seconds" });
    await materializer().run(5_000);
    const old = await occurrencesOf("editable");
    await hg.schedules!.update(tenant, "editable", {
      event: { type: "test.record", payload: { label: "v2" } },
    });
    await materializer().run(5_000);
    const all = await occurrencesOf("editable");
    for (const e of all) {
      if (old.some((o) => o.id === e.id)) expect(e.status).toBe("cancelled");
      else {
        expect(e.id).toMatch(/~2\.[0-9a-f]{12}$/);
        expect(e.payload).toEqual({ label: "v2" });
      }
    }
    expect(all.length).toBeGreaterThan(old.length);
  });

  it("delete cancels the occurrences that have not started", async () => {
    await create("deletable", { rate: "1 second" });
    await materializer().run(5_000);
    await hg.schedules!.delete(tenant, "deletable");
    const events = await occurrencesOf("deletable");
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.status === "cancelled")).toBe(true);
    now += 2_000;
    await materializer().run(5_000);
    expect((await occurrencesOf("deletable")).length).toBe(events.length);
  });
});

describe("catchUp after downtime", () => {
  it("latest runs the most recent missed occurrence, all runs each, none skips them", async () => {
    for (const catchUp of ["latest", "all", "none"])
      await create(`down-${catchUp}`, { rate: "1 minute", catchUp });
    await materializer().run(5_000);
    const counts = Object.fromEntries(
      await Promise.all(
        ["latest", "all", "none"].map(async (c) => [c, (await occurrencesOf(`down-${c}`)).length]),
      ),
    );
    now += 3_600_000; // an hour of downtime
    await materializer().run(20_000);
    const lateBound = now - hg.config.schedules.missedAfterMs;
    for (const catchUp of ["latest", "all", "none"]) {
      const events = (await occurrencesOf(`down-${catchUp}`)).slice(counts[catchUp]);
      const past = events.filter((e) => parseOccurrenceId(e.id)!.occurrenceAt < lateBound);
      const view = await hg.schedules!.get(tenant, `down-${catchUp}`);
      if (catchUp === "latest") expect(past.length).toBe(1);
      if (catchUp === "none") expect(past.length).toBe(0);
      if (catchUp === "all") expect(past.length).toBeGreaterThanOrEqual(58);
      expect(past.length + view.missed).toBeGreaterThanOrEqual(58);
      expect(past.length + view.missed).toBeLessThanOrEqual(60);
    }
  });
});

describe('overlap "skip"', () => {
  it("creates one occurrence at a time and skips (and counts) those due while the previous has not finished", async () => {
    await create("no-overlap", { rate: "10 seconds", overlap: "skip" });
    now += 10_000;
    await materializer().run(5_000);
    const [firstEvent] = await occurrencesOf("no-overlap");
    expect(await occurrencesOf("no-overlap")).toHaveLength(1);
    // The first occurrence never finishes (no worker here): the next ones come due and are skipped.
    now += 25_000;
    await materializer().run(5_000);
    expect(await occurrencesOf("no-overlap")).toHaveLength(1);
    expect((await hg.schedules!.get(tenant, "no-overlap")).skipped).toBeGreaterThanOrEqual(2);
    // Once it has finished, the next one is created.
    await hg.events.cancel(tenant, firstEvent!.id);
    now += 10_000;
    await materializer().run(5_000);
    expect(await occurrencesOf("no-overlap")).toHaveLength(2);
  });
});

describe("on the running local stack", () => {
  let live: TestHourglass;
  let runtime: Runtime;
  const seen: { id: string; scheduleId?: string; occurrenceAt?: number; startedAt: number }[] = [];
  beforeAll(async () => {
    const probe = defineHandler("test.occurrence", z.object({}), async (_, context) => {
      seen.push({
        id: context.id,
        scheduleId: context.scheduleId,
        occurrenceAt: context.occurrenceAt?.getTime(),
        startedAt: Date.now(),
      });
    });
    live = await testHourglass({}, { handlers: [probe] });
    runtime = startRuntime(live, { tickMs: 200 });
  });
  afterAll(async () => {
    await runtime.stop();
    await live.destroy();
  });

  it("runs each occurrence once, never early, with scheduleId and occurrenceAt in the handler's context", async () => {
    await live.schedules!.create(tenant, {
      id: "live",
      cron: "* * * * * *",
      event: { type: "test.occurrence", payload: {} },
    });
    // Each occurrence is materialized, claimed, queued and run a tick at a time: on a loaded
    // machine five of them took more than 20 s.
    await eventually(async () => (seen.length >= 5 ? true : undefined), 60_000, "five occurrences");
    await live.schedules!.delete(tenant, "live");
    const ids = seen.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const run of seen) {
      expect(run.scheduleId).toBe("live");
      const instant = `${new Date(run.occurrenceAt!).toISOString().slice(0, 19)}Z`;
      expect(run.id).toMatch(new RegExp(`^live@${instant}~1\\.[0-9a-f]{12}$`));
      expect(run.startedAt).toBeGreaterThanOrEqual(run.occurrenceAt!);
    }
  }, 90_000);
});
