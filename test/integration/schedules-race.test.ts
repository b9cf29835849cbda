import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { parseOccurrenceId } from "../../shared/model/occurrence-id.ts";
import { between, evaluator } from "../../shared/schedules/evaluate.ts";
import { Materializer } from "../../shared/schedules/materializer.ts";
import type { ScheduleItem } from "../../shared/schedules/model.ts";
import { type Advance, ScheduleStore } from "../../shared/schedules/store.ts";
import { eventually, signal, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * Two materializers on a schedule's last pass (the lease lapsed, or a retried tick beside a fresh
 * one): both create the final occurrences, one advances the schedule to "ended", the other's advance
 * fails. The loser must not undo occurrences the winner's advance covers: every one of them runs,
 * exactly once. Real clock, real DynamoDB conditions; only the order of the two passes is steered.
 */
const tenant = "acme";
const rec = recorder();
let hg: TestHourglass;
let runtime: Runtime | undefined;

beforeAll(async () => {
  hg = await testHourglass({}, { handlers: [rec.handler] });
});
afterAll(async () => {
  await runtime?.stop();
  await hg.destroy();
});

/**
 * The real store, where a pass waits at a gate after announcing that it reached it: before its
 * advance, or once it has read a page of due schedules (before it creates their occurrences).
 */
class GatedStore extends ScheduleStore {
  readonly reached = signal();
  readonly gate = signal();
  constructor(private readonly at: "advance" | "page") {
    super(hg.dynamo, hg.config.tables.schedules);
  }
  override async advance(item: ScheduleItem, change: Advance): Promise<boolean> {
    if (this.at === "advance") await this.wait();
    return super.advance(item, change);
  }
  override async due(shard: number, before: number, limit: number, cursor?: string) {
    const page = await super.due(shard, before, limit, cursor);
    // The pass's first look (one item per shard) only decides whether to take the lease.
    if (this.at === "page" && limit > 1 && page.items.length > 0) await this.wait();
    return page;
  }
  private async wait(): Promise<void> {
    this.reached.fire();
    await this.gate.promise;
  }
}

const materializer = (store: ScheduleStore) =>
  new Materializer({
    config: hg.config,
    store,
    events: hg.events,
    leases: undefined,
    logger: hg.logger,
    clock: () => Date.now(),
    systemTenant: "~system",
  });

describe("a pass that read a schedule deleted and created again before it wrote", () => {
  it("neither advances the new schedule nor leaves the old one's occurrences to run", async () => {
    // Both start at the same instant, so the old read and the new schedule agree on revision and nextAt.
    const startAt = new Date(Math.ceil((Date.now() + 2_000) / 1_000) * 1_000).toISOString();
    const body = (label: string) => ({
      id: "reborn",
      rate: "1 second",
      startAt,
      event: { type: "test.record", payload: { label } },
    });
    await hg.schedules!.create(tenant, body("first"));
    const gated = new GatedStore("page");
    const stale = materializer(gated).run(30_000);
    await gated.reached.promise;
    // The delete's sweep finds nothing yet: the stale pass creates the old schedule's events after it.
    await hg.schedules!.delete(tenant, "reborn");
    const { schedule } = await hg.schedules!.create(tenant, body("second"));
    gated.gate.fire();
    await stale;
    const untouched = await hg.schedules!.get(tenant, "reborn");
    expect(untouched.nextAt).toBe(schedule.nextAt);
    expect(untouched.occurrences).toBe(0);

    await materializer(new ScheduleStore(hg.dynamo, hg.config.tables.schedules)).run(30_000);
    const events = (await hg.events.list(tenant, { scheduleId: "reborn", limit: 100 })).events;
    const live = events.filter((e) => e.status !== "cancelled");
    expect(live.length).toBeGreaterThan(0);
    for (const e of live) expect(e.payload).toEqual({ label: "second" });
    expect((await hg.schedules!.get(tenant, "reborn")).occurrences).toBe(live.length);
    await hg.schedules!.delete(tenant, "reborn");
  });
});

describe("a pass whose budget is spent before it starts (a slow store)", () => {
  it("still materializes the first due shards, so schedules never stall", async () => {
    await hg.schedules!.create(tenant, {
      id: "no-budget",
      rate: "1 second",
      event: { type: "test.record", payload: {} },
    });
    await materializer(new ScheduleStore(hg.dynamo, hg.config.tables.schedules)).run(0);
    expect((await hg.schedules!.get(tenant, "no-budget")).occurrences).toBeGreaterThan(0);
    await hg.schedules!.delete(tenant, "no-budget");
  });
});

describe("two materializers on a schedule's last pass", () => {
  it("the loser cancels nothing the winner advanced over: every final occurrence runs once", async () => {
    // Ends within one pass: a single pass materializes every occurrence and ends the schedule.
    const endAt = Date.now() + 4_000;
    const { schedule } = await hg.schedules!.create(tenant, {
      id: "last-pass",
      rate: "1 second",
      endAt: new Date(endAt).toISOString(),
      event: { type: "test.record", payload: {} },
    });
    const expected = between(
      evaluator({ rate: "1 second", timezone: "UTC", anchor: schedule.nextAt!, endAt }),
      schedule.nextAt!,
      endAt,
      100,
    );
    expect(expected.length).toBeGreaterThanOrEqual(2);

    // The loser reads the schedule and creates the occurrences, then waits before its advance.
    const gated = new GatedStore("advance");
    const loser = materializer(gated).run(30_000);
    await gated.reached.promise;
    // The winner makes the same pass (finding the same events) and ends the schedule.
    await materializer(new ScheduleStore(hg.dynamo, hg.config.tables.schedules)).run(30_000);
    gated.gate.fire();
    await loser;
    const ended = await hg.schedules!.get(tenant, "last-pass");
    expect(ended.state).toBe("ended");
    expect(ended.occurrences).toBe(expected.length);
    const listed = (await hg.events.list(tenant, { scheduleId: "last-pass", limit: 100 })).events;
    // Due within the look-ahead, so some went straight to the queue; none is cancelled.
    expect(listed).toHaveLength(expected.length);
    for (const e of listed) expect(e.status).toMatch(/^(scheduled|dispatched)$/);

    runtime = startRuntime(hg, { tickMs: 200 });
    const ran = await eventually(
      async () => {
        const ids = new Set(rec.runs.map((r) => r.id));
        return ids.size >= expected.length ? ids : undefined;
      },
      30_000,
      "every final occurrence to run",
    );
    // Give a duplicate delivery time to show before counting.
    await new Promise((done) => setTimeout(done, 1_500));
    expect([...ran].map((id) => parseOccurrenceId(id)!.occurrenceAt).sort((a, b) => a - b)).toEqual(expected);
    expect(rec.runs.length).toBe(expected.length);
    for (const run of rec.runs) expect(run.startedAt).toBeGreaterThanOrEqual(run.runAt);
  });
});
