import { describe, expect, it } from "vitest";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/**
 * Validation messages a newcomer meets first, through the real HTTP API: each names the field and
 * says how to write it, in Hourglass's words (never a library's internals).
 */
const rec = recorder();
const served = useApiServer({}, { handlers: [rec.handler] });

const event = { type: "test.record", payload: { label: "msg" } };
const schedule = { timezone: "UTC", event };

async function refusal(method: string, path: string, body: unknown) {
  const response = await served.api.call(method, path, body);
  expect(response.status).toBe(422);
  expect(response.type).toContain("application/problem+json");
  return response.json.errors as { path: string; message: string }[];
}

/** croner's vocabulary, which must never reach a client. */
const LIBRARY_WORDS = /CronPattern|mode '|5-or-6|configuration entry|illegal characters|parts are required/;

describe("a time without a zone", () => {
  it("POST /v1/events: runAt without Z or an offset says to add one, and nothing is created", async () => {
    const errors = await refusal("POST", "/v1/events", {
      ...event,
      id: "no-zone",
      runAt: "2026-12-06T10:00:00",
    });
    expect(errors).toEqual([
      { path: "runAt", message: expect.stringContaining("add Z (UTC) or an offset such as +02:00") },
    ]);
    expect(errors[0]!.message).toContain("2026-12-06T10:00:00Z");
    expect((await served.api.call("GET", "/v1/events/no-zone")).status).toBe(404);
  });

  it("PATCH /v1/events/{id} and a schedule's startAt say the same", async () => {
    const created = await served.api.call("POST", "/v1/events", { ...event, delaySeconds: 3600 });
    expect(created.status).toBe(201);
    const patched = await refusal("PATCH", `/v1/events/${created.json.id}`, {
      runAt: "2027-01-01T09:00:00.5",
    });
    expect(patched).toEqual([
      { path: "runAt", message: expect.stringContaining("add Z (UTC) or an offset") },
    ]);
    const startAt = await refusal("POST", "/v1/schedules", {
      ...schedule,
      cron: "0 9 * * *",
      startAt: "2027-01-01T00:00:00",
    });
    expect(startAt).toEqual([
      { path: "startAt", message: expect.stringContaining("add Z (UTC) or an offset") },
    ]);
  });

  it("a string that is no time at all gets an example of one", async () => {
    const errors = await refusal("POST", "/v1/events", { ...event, runAt: "tomorrow at nine" });
    expect(errors).toEqual([
      { path: "runAt", message: expect.stringContaining("such as 2026-12-06T10:00:00Z") },
    ]);
  });
});

describe("cron and rate", () => {
  it("a 7-part expression says how many fields are allowed, in Hourglass's words", async () => {
    const [issue] = await refusal("POST", "/v1/schedules", { ...schedule, cron: "0 0 9 * * * 2027" });
    expect(issue).toEqual({
      path: "cron",
      message: expect.stringMatching(/^has 7 fields; .*five fields .*six with seconds first/),
    });
    expect(issue!.message).not.toMatch(LIBRARY_WORDS);
  });

  it("a wrong field is named with its range", async () => {
    for (const [cron, field] of [
      ["61 * * * *", 'the minute field "61"'],
      ["0 9 * 13 *", 'the month field "13"'],
      ["0 9 * * MON-FUN", 'the day-of-week field "MON-FUN"'],
    ] as const) {
      const [issue] = await refusal("POST", "/v1/schedules", { ...schedule, cron });
      expect(issue).toEqual({ path: "cron", message: expect.stringContaining(field) });
      expect(issue!.message).not.toMatch(LIBRARY_WORDS);
    }
  });

  it("EventBridge's cron(…) and its bare six fields say what to write here and point at the import", async () => {
    for (const cron of ["cron(0 9 ? * MON-FRI *)", "0 9 ? * MON-FRI *"]) {
      const [issue] = await refusal("POST", "/v1/schedules", { ...schedule, cron });
      expect(issue!.path).toBe("cron");
      expect(issue!.message).toContain('here write cron "0 0 9 ? * MON-FRI"');
      expect(issue!.message).toContain("hourglass schedules import --from-eventbridge");
      expect(issue!.message).not.toMatch(LIBRARY_WORDS);
    }
    // The suggestion is a schedule this API takes.
    const taken = await served.api.call("POST", "/v1/schedules", { ...schedule, cron: "0 0 9 ? * MON-FRI" });
    expect(taken.status).toBe(201);
  });

  it("EventBridge's rate(…), in cron or in rate, says to give the rate without rate( )", async () => {
    for (const body of [{ cron: "rate(5 minutes)" }, { rate: "rate(5 minutes)" }]) {
      const [issue] = await refusal("POST", "/v1/schedules", { ...schedule, ...body });
      expect(issue).toEqual({
        path: Object.keys(body)[0],
        message: expect.stringContaining('give the rate field "5 minutes" without rate( )'),
      });
      expect(issue!.message).toContain("hourglass schedules import --from-eventbridge");
    }
  });
});
