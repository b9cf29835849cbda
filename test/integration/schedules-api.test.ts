import { describe, expect, it } from "vitest";
import { HourglassClient } from "../../shared/client/client.ts";
import { ScheduleService } from "../../shared/schedules/service.ts";
import { ScheduleStore } from "../../shared/schedules/store.ts";
import { runCli } from "../support/cli.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/** The recurring schedules' HTTP contract, against the real local stack. */
const rec = recorder();
const served = useApiServer({ HOURGLASS_SCHEDULE_MIN_INTERVAL_SECONDS: "5" }, { handlers: [rec.handler] });

const base = {
  cron: "30 2 * * *",
  timezone: "Europe/Berlin",
  event: { type: "test.record", payload: { label: "nightly" } },
};

const problemOf = (response: { status: number; type: string; json: Record<string, unknown> }) => {
  expect(response.type).toContain("application/problem+json");
  expect(response.json.status).toBe(response.status);
  return response.json;
};

describe("POST /v1/schedules", () => {
  it("creates a schedule (201), repeats it (200), and refuses other content under the same id (409)", async () => {
    const created = await served.api.call("POST", "/v1/schedules", { id: "nightly", ...base });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      id: "nightly",
      cron: "30 2 * * *",
      timezone: "Europe/Berlin",
      state: "active",
      revision: 1,
      overlap: "allow",
      catchUp: "latest",
      jitterSeconds: 0,
      occurrences: 0,
      event: { type: "test.record", payload: { label: "nightly" } },
    });
    expect(Date.parse(created.json.nextAt)).toBeGreaterThan(Date.now());
    const again = await served.api.call("POST", "/v1/schedules", { id: "nightly", ...base });
    expect(again.status).toBe(200);
    expect(again.json.createdAt).toBe(created.json.createdAt);
    const conflict = await served.api.call("POST", "/v1/schedules", {
      id: "nightly",
      ...base,
      cron: "0 3 * * *",
    });
    expect(conflict.status).toBe(409);
    expect(problemOf(conflict).existing).toMatchObject({ id: "nightly", cron: "30 2 * * *" });
  });

  it("refuses the ids . and .., which no URL can address, and nothing is created", async () => {
    for (const id of [".", ".."]) {
      const refused = await served.api.call("POST", "/v1/schedules", { id, ...base });
      expect(refused.status).toBe(422);
      expect(problemOf(refused).errors).toEqual([expect.objectContaining({ path: "id" })]);
    }
    const listed = await served.api.call("GET", "/v1/schedules?limit=100");
    expect(listed.json.schedules.map((s: { id: string }) => s.id)).not.toContain("..");
    expect(listed.json.schedules.map((s: { id: string }) => s.id)).not.toContain(".");
    // Dots with anything else are ordinary ids.
    expect((await served.api.call("POST", "/v1/schedules", { id: "...", ...base })).status).toBe(201);
    expect((await served.api.call("GET", "/v1/schedules/...")).status).toBe(200);
  });

  it("gives an id when none is sent, and accepts rates", async () => {
    const created = await served.api.call("POST", "/v1/schedules", {
      rate: "5 minutes",
      event: { type: "test.record", payload: {} },
    });
    expect(created.status).toBe(201);
    expect(created.json.id).toMatch(/^[0-9A-Z]{26}$/);
    expect(created.json.timezone).toBe("UTC");
  });

  it.each([
    ["a never-firing expression", { cron: "0 0 30 2 *" }, "cron", /never fires/],
    ["both cron and rate", { rate: "1 minute" }, "cron", /exactly one/],
    ["an unknown zone", { timezone: "Mars/Olympus" }, "timezone", /IANA/],
    ["a malformed expression", { cron: "61 * * * *" }, "cron", /./],
    ["an interval under the minimum", { cron: "*/2 * * * * *" }, "cron", /shortest interval allowed is 5 s/],
    ["a rate under the minimum", { cron: undefined, rate: "2 seconds" }, "rate", /shortest interval/],
    ["a bad rate", { cron: undefined, rate: "every hour" }, "rate", /unit/],
    ["an unknown event type", { event: { type: "nope" } }, "event.type", /unknown/],
    [
      "endAt before startAt",
      { startAt: "2027-01-02T00:00:00Z", endAt: "2027-01-01T00:00:00Z" },
      "endAt",
      /after/,
    ],
    ["a cron with an endAt already past", { endAt: "2020-01-01T00:00:00Z" }, "endAt", /before endAt/],
    [
      "a cron whose only occurrence is after endAt",
      { cron: "0 0 1 1 *", startAt: "2027-01-02T00:00:00Z", endAt: "2027-06-01T00:00:00Z" },
      "endAt",
      /before endAt/,
    ],
  ])("refuses %s with a 422 naming the field", async (_, change, path, message) => {
    const response = await served.api.call("POST", "/v1/schedules", { ...base, ...change });
    expect(response.status).toBe(422);
    const body = problemOf(response);
    const issues = body.errors as { path: string; message: string }[];
    expect(issues.some((i) => i.path === path && message.test(i.message))).toBe(true);
  });

  it("caps schedules per tenant with a 422", async () => {
    const hg = served.hg;
    expect(hg.config.schedules.perTenant).toBe(1_000);
    const small = new ScheduleService({
      config: { ...hg.config, schedules: { ...hg.config.schedules, perTenant: 2 } },
      store: new ScheduleStore(hg.dynamo, hg.config.tables.schedules),
      events: hg.events,
      registry: hg.registry,
      logger: hg.logger,
      clock: Date.now,
    });
    await small.create("capped", { ...base, id: "a" });
    await small.create("capped", { ...base, id: "b" });
    await expect(small.create("capped", { ...base, id: "c" })).rejects.toThrow(/at most 2 schedules/);
    // Another tenant is not affected, and deleting one frees its place.
    await expect(small.create("other", { ...base, id: "c" })).resolves.toMatchObject({ created: true });
    await small.delete("capped", "a");
    await expect(small.create("capped", { ...base, id: "c" })).resolves.toMatchObject({ created: true });
  });
});

describe("reading, listing and the next occurrences", () => {
  it("lists with a cursor and filters by type and state", async () => {
    for (const id of ["list-1", "list-2", "list-3"]) {
      await served.api.call("POST", "/v1/schedules", { ...base, id });
    }
    await served.api.call("POST", "/v1/schedules/list-2/pause");
    const first = await served.api.call("GET", "/v1/schedules?limit=2");
    expect(first.status).toBe(200);
    expect(first.json.schedules).toHaveLength(2);
    expect(typeof first.json.cursor).toBe("string");
    const paused = await served.api.call("GET", "/v1/schedules?state=paused");
    expect(paused.json.schedules.map((s: { id: string }) => s.id)).toEqual(["list-2"]);
    const byType = await served.api.call("GET", "/v1/schedules?type=webhook");
    expect(byType.json.schedules).toEqual([]);
    for (const type of ["Not-A-Type", ""]) {
      const refused = await served.api.call("GET", `/v1/schedules?type=${type}`);
      expect(refused.status).toBe(422);
      expect(problemOf(refused).errors).toEqual([expect.objectContaining({ path: "type" })]);
    }
  });

  it("refuses a cursor it did not hand out with a 422, never a 503", async () => {
    for (const id of ["cursor-1", "cursor-2"])
      await served.api.call("POST", "/v1/schedules", { ...base, id });
    const first = await served.api.call("GET", "/v1/schedules?limit=1");
    const own = JSON.parse(Buffer.from(first.json.cursor, "base64url").toString("utf8"));
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    for (const cursor of [
      "garbage",
      encode({ ...own, pk: "another-tenant" }),
      encode({ pk: own.pk, sk: 42 }),
      encode({ pk: own.pk }),
      encode({ ...own, extra: "x" }),
      encode([own.pk, own.sk]),
    ]) {
      const refused = await served.api.call("GET", `/v1/schedules?cursor=${cursor}`);
      expect(refused.status).toBe(422);
      expect(problemOf(refused).errors).toEqual([expect.objectContaining({ path: "cursor" })]);
    }
    expect((await served.api.call("GET", `/v1/schedules?cursor=${first.json.cursor}`)).status).toBe(200);
  });

  it("gives the next occurrences in UTC and in the zone, across a DST change", async () => {
    await served.api.call("POST", "/v1/schedules", {
      ...base,
      id: "spring",
      startAt: "2027-03-27T00:00:00Z",
    });
    const next = await served.api.call("GET", "/v1/schedules/spring/next?count=3");
    expect(next.status).toBe(200);
    expect(next.json.occurrences).toEqual([
      { at: "2027-03-27T01:30:00.000Z", local: "2027-03-27T02:30:00+01:00" },
      { at: "2027-03-28T01:00:00.000Z", local: "2027-03-28T03:00:00+02:00" },
      { at: "2027-03-29T00:30:00.000Z", local: "2027-03-29T02:30:00+02:00" },
    ]);
    expect((await served.api.call("GET", "/v1/schedules/spring/next?count=0")).status).toBe(422);
  });

  it("answers 404 for a schedule that does not exist, and for an id that cannot be one", async () => {
    expect((await served.api.call("GET", "/v1/schedules/missing")).status).toBe(404);
    expect((await served.api.call("GET", "/v1/schedules/bad@id")).status).toBe(404);
    expect((await served.api.call("DELETE", "/v1/schedules/missing")).status).toBe(404);
    expect((await served.api.call("POST", "/v1/schedules/missing/pause")).status).toBe(404);
  });
});

describe("editing, pausing, resuming, deleting", () => {
  it("edits make a new revision and are validated like a create", async () => {
    await served.api.call("POST", "/v1/schedules", { ...base, id: "edit-me" });
    const edited = await served.api.call("PATCH", "/v1/schedules/edit-me", { rate: "1 hour" });
    expect(edited.status).toBe(200);
    expect(edited.json).toMatchObject({ id: "edit-me", rate: "1 hour", revision: 2, state: "active" });
    expect(edited.json.cron).toBeUndefined();
    const bad = await served.api.call("PATCH", "/v1/schedules/edit-me", { timezone: "Nowhere/Else" });
    expect(bad.status).toBe(422);
    const unknownField = await served.api.call("PATCH", "/v1/schedules/edit-me", { id: "other" });
    expect(unknownField.status).toBe(422);
  });

  it("pauses and resumes (each a new revision), and deletes", async () => {
    await served.api.call("POST", "/v1/schedules", { ...base, id: "pause-me" });
    const paused = await served.api.call("POST", "/v1/schedules/pause-me/pause");
    expect(paused.json).toMatchObject({ state: "paused", revision: 2 });
    const pausedAgain = await served.api.call("POST", "/v1/schedules/pause-me/pause");
    expect(pausedAgain.json).toMatchObject({ state: "paused", revision: 2 });
    const resumed = await served.api.call("POST", "/v1/schedules/pause-me/resume");
    expect(resumed.json).toMatchObject({ state: "active", revision: 3 });
    const deleted = await served.api.call("DELETE", "/v1/schedules/pause-me");
    expect(deleted.status).toBe(200);
    expect((await served.api.call("GET", "/v1/schedules/pause-me")).status).toBe(404);
  });

  it("counts schedules by state", async () => {
    const stats = await served.api.call("GET", "/v1/stats/schedules");
    expect(stats.status).toBe(200);
    expect(stats.json.schedules.active).toBeGreaterThan(0);
    expect(stats.json.schedules.paused).toBeGreaterThan(0);
    expect(stats.json).toMatchObject({ occurrences: expect.any(Number), skipped: 0, missed: 0 });
  });
});

describe("the typed client and the CLI", () => {
  it("pages through schedules with for await, and reads, pauses, resumes and deletes", async () => {
    const client = new HourglassClient({ url: served.api.base, retries: 0 });
    for (const id of ["client-a", "client-b", "client-c"]) {
      await client.createSchedule({ ...base, id, event: { type: "test.record", payload: {} } });
    }
    const ids: string[] = [];
    for await (const s of client.listAllSchedules({ limit: 1 })) ids.push(s.id);
    expect(ids).toEqual(expect.arrayContaining(["client-a", "client-b", "client-c"]));
    expect(new Set(ids).size).toBe(ids.length);
    expect((await client.nextOccurrences("client-a", 2)).map((o) => o.local)).toHaveLength(2);
    expect((await client.pauseSchedule("client-a")).state).toBe("paused");
    expect((await client.resumeSchedule("client-a")).state).toBe("active");
    expect((await client.updateSchedule("client-a", { jitterSeconds: 30 })).jitterSeconds).toBe(30);
    expect((await client.deleteSchedule("client-a")).id).toBe("client-a");
    await expect(client.getSchedule("client-a")).rejects.toMatchObject({ status: 404 });
    expect((await client.scheduleStats()).schedules.active).toBeGreaterThan(0);
  });

  it("hourglass schedules create, ls, next and rm", async () => {
    const created = await runCli(
      served.api.base,
      "--json",
      "schedules",
      "create",
      "--id",
      "cli-one",
      "--cron",
      "0 9 * * MON-FRI",
      "--tz",
      "America/New_York",
      "--type",
      "test.record",
      "--payload",
      "{}",
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ id: "cli-one", state: "active" });
    const listed = await runCli(served.api.base, "schedules", "ls");
    expect(listed.stdout).toContain("cli-one");
    const next = await runCli(served.api.base, "schedules", "next", "cli-one", "--count", "2");
    expect(next.stdout.trim().split("\n")).toHaveLength(2);
    expect(next.stdout).toMatch(/T09:00:00-0[45]:00/);
    const refused = await runCli(
      served.api.base,
      "schedules",
      "create",
      "--cron",
      "0 0 30 2 *",
      "--type",
      "test.record",
      "--payload",
      "{}",
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("never fires");
    expect((await runCli(served.api.base, "schedules", "rm", "cli-one")).code).toBe(0);
  });
});
