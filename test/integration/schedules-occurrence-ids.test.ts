import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fingerprintOf } from "../../shared/events/validate.ts";
import type { LogAttributes, Logger } from "../../shared/logger.ts";
import { OCCURRENCE_ID } from "../../shared/model/occurrence-id.ts";
import { OccurrenceTakenError } from "../../shared/schedules/errors.ts";
import { Materializer } from "../../shared/schedules/materializer.ts";
import { occurrenceEvent } from "../../shared/schedules/occurrences.ts";
import { ScheduleStore } from "../../shared/schedules/store.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * What an occurrence's id meets. "Already exists" counts as made only when the existing event is
 * the occurrence: an event under its id with other content is someone else's, and the occurrence
 * did not happen, so the schedule says so (missed, an error in the log) instead of counting it as
 * made. And schedules stored before ids carried an incarnation keep materializing under their old
 * ids until an edit gives them one.
 */
const tenant = "acme";
const rec = recorder();
let hg: TestHourglass;
let now = Date.parse("2026-12-01T10:00:00.200Z");
const errors: { message: string; attributes?: LogAttributes }[] = [];
const logger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: (message, attributes) => errors.push({ message, attributes }),
};

beforeAll(async () => {
  hg = await testHourglass({}, { handlers: [rec.handler], clock: () => now });
});
afterAll(async () => {
  await hg.destroy();
});

describe("an occurrence whose id another event holds", () => {
  it("is counted as missed and logged, not as made, and the other event is left alone", async () => {
    await hg.schedules!.create(tenant, {
      id: "held",
      rate: "1 second",
      event: { type: "test.record", payload: {} },
    });
    const store = new ScheduleStore(hg.dynamo, hg.config.tables.schedules);
    const item = (await store.get(tenant, "held"))!;
    const occurrence = occurrenceEvent(item, item.nextAt!, now);
    expect(occurrence.id).toMatch(OCCURRENCE_ID);
    const impostor = {
      ...occurrence,
      payload: { label: "impostor" },
      fingerprint: fingerprintOf(["impostor"]),
    };
    expect((await hg.events.storeMany([impostor]))[0]!.ok).toBe(true);

    const report = await new Materializer({
      config: hg.config,
      store,
      events: hg.events,
      leases: undefined,
      logger,
      clock: () => now,
      systemTenant: "~system",
    }).run(5_000);

    const view = await hg.schedules!.get(tenant, "held");
    const events = (await hg.events.list(tenant, { scheduleId: "held", limit: 100 })).events;
    const made = events.filter((e) => e.id !== impostor.id);
    expect(made.length).toBeGreaterThan(0);
    expect(view.missed).toBe(1);
    expect(report.missed).toBe(1);
    expect(view.occurrences).toBe(made.length);
    expect(report.materialized).toBe(made.length);
    const held = await hg.events.get(tenant, impostor.id);
    expect(held.status).not.toBe("cancelled");
    const logged = errors.map((e) => e.attributes?.error);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toBeInstanceOf(OccurrenceTakenError);
    expect(logged[0]).toMatchObject({ tenant, scheduleId: "held", id: impostor.id });
  });
});

describe("a schedule stored before occurrence ids carried an incarnation", () => {
  it("materializes under its old ids, and an edit moves it to ids with an incarnation", async () => {
    await hg.schedules!.create(tenant, {
      id: "old",
      rate: "1 second",
      event: { type: "test.record", payload: {} },
    });
    // As the previous version stored it: no incarnation.
    await hg.dynamo.send(
      new UpdateCommand({
        TableName: hg.config.tables.schedules,
        Key: { pk: tenant, sk: "old" },
        UpdateExpression: "REMOVE incarnation",
      }),
    );
    const store = new ScheduleStore(hg.dynamo, hg.config.tables.schedules);
    const materializer = () =>
      new Materializer({
        config: hg.config,
        store,
        events: hg.events,
        leases: undefined,
        logger,
        clock: () => now,
        systemTenant: "~system",
      });
    await materializer().run(5_000);
    const legacy = (await hg.events.list(tenant, { scheduleId: "old", limit: 100 })).events;
    expect(legacy.length).toBeGreaterThan(0);
    for (const e of legacy) expect(e.id).toMatch(/^old@[^~]+Z$/);
    expect((await hg.schedules!.get(tenant, "old")).occurrences).toBe(legacy.length);

    await hg.schedules!.update(tenant, "old", { event: { type: "test.record", payload: { label: "v2" } } });
    expect((await store.get(tenant, "old"))!.incarnation).toMatch(/^[0-9a-f]{12}$/);
    now += 2_000;
    await materializer().run(5_000);
    const all = (await hg.events.list(tenant, { scheduleId: "old", limit: 100 })).events;
    const fresh = all.filter((e) => !legacy.some((l) => l.id === e.id));
    expect(fresh.length).toBeGreaterThan(0);
    expect((await hg.schedules!.get(tenant, "old")).occurrences).toBe(legacy.length + fresh.length);
    for (const e of fresh) expect(e.id).toMatch(/^old@[^~]+Z~2\.[0-9a-f]{12}$/);
    for (const e of all.filter((e) => legacy.some((l) => l.id === e.id))) expect(e.status).toBe("cancelled");
  });
});
