import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { eventually, signal } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/** The public HTTP contract, over HTTP, against the real local stack. */
const rec = recorder();
/** A handler that runs until the test lets its event (by id) finish. */
const finish = new Map<string, ReturnType<typeof signal>>();
const blockRuns: string[] = [];
const blocking = defineHandler("test.block", z.object({}), async (_payload, context) => {
  blockRuns.push(context.id);
  await finish.get(context.id)?.promise;
});

const TENANTS = 40;
const served = useApiServer(
  {
    HOURGLASS_API_TOKENS: Array.from({ length: TENANTS }, (_, i) => `api-${i}:token-of-api-tenant-${i}`).join(
      ",",
    ),
  },
  { handlers: [rec.handler, blocking] },
);

/**
 * Every test calls as a tenant of its own, so no assertion (a count, a list, a page) depends on
 * which tests ran before it.
 */
let tenants = 0;
function asNewTenant() {
  const i = tenants++;
  if (i >= TENANTS) throw new Error("more tests than tenants: raise TENANTS");
  const auth = { authorization: `Bearer token-of-api-tenant-${i}` };
  const call = (method: string, path: string, body?: unknown) => served.api.call(method, path, body, auth);
  return Object.assign(call, { auth });
}

const problemOf = (response: { status: number; type: string; json: Record<string, unknown> }) => {
  expect(response.type).toContain("application/problem+json");
  expect(response.json.status).toBe(response.status);
  expect(typeof response.json.title).toBe("string");
  return response.json;
};

describe("POST /v1/events", () => {
  it("schedules an event and answers 201 with ISO times", async () => {
    const call = asNewTenant();
    const runAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await call("POST", "/v1/events", { type: "test.record", payload: {}, runAt });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      status: "scheduled",
      runAt,
      attempts: 0,
      maxAttempts: 5,
      type: "test.record",
    });
    expect(created.json.overdue).toBeUndefined();
    const read = await call("GET", `/v1/events/${created.json.id}`);
    expect(read.status).toBe(200);
    expect(read.json).toMatchObject({ id: created.json.id, status: "scheduled", runAt });
    expect(Date.parse(read.json.createdAt)).toBeGreaterThan(0);
  });

  it("answers 200 for the same id and content, 409 for the same id with other content", async () => {
    const call = asNewTenant();
    const body = { id: "invoice-7", type: "test.record", payload: { label: "x" }, delaySeconds: 600 };
    expect((await call("POST", "/v1/events", body)).status).toBe(201);
    const again = await call("POST", "/v1/events", body);
    expect(again.status).toBe(200);
    expect(again.json.id).toBe("invoice-7");
    const conflict = await call("POST", "/v1/events", { ...body, payload: { label: "y" } });
    expect(conflict.status).toBe(409);
    expect(problemOf(conflict).existing).toMatchObject({ id: "invoice-7", payload: { label: "x" } });
  });

  it("refuses the ids . and .., which no URL can address (they could never be read or cancelled)", async () => {
    const call = asNewTenant();
    for (const id of [".", ".."]) {
      const refused = await call("POST", "/v1/events", {
        id,
        type: "test.record",
        payload: {},
        delaySeconds: 600,
      });
      expect(refused.status).toBe(422);
      expect(problemOf(refused).errors).toEqual([expect.objectContaining({ path: "id" })]);
      const batch = await call("POST", "/v1/events/batch", {
        events: [{ id, type: "test.record", payload: {}, delaySeconds: 600 }],
      });
      expect(batch.json.results[0]).toMatchObject({
        status: 422,
        error: { errors: [{ path: "events[0].id" }] },
      });
    }
    expect((await call("GET", "/v1/events?limit=10")).json.events).toEqual([]);
    // Dots with anything else are ordinary ids, and addressable.
    expect(
      (await call("POST", "/v1/events", { id: "...", type: "test.record", payload: {}, delaySeconds: 600 }))
        .status,
    ).toBe(201);
    expect((await call("DELETE", "/v1/events/...")).json.status).toBe("cancelled");
  });

  it("runs a runAt in the past as soon as possible, and says so", async () => {
    const call = asNewTenant();
    const past = new Date(Date.now() - 60_000).toISOString();
    const created = await call("POST", "/v1/events", {
      type: "test.record",
      payload: {},
      runAt: past,
    });
    expect(created.status).toBe(201);
    expect(created.json.overdue).toBe(true);
  });

  it.each([
    [
      "both runAt and delaySeconds",
      { type: "test.record", payload: {}, delaySeconds: 1, runAt: new Date().toISOString() },
      "runAt",
    ],
    ["neither runAt nor delaySeconds", { type: "test.record", payload: {} }, "runAt"],
    ["an unknown type", { type: "no.such.type", payload: {}, delaySeconds: 1 }, "type"],
    [
      "a runAt beyond the horizon",
      { type: "test.record", payload: {}, runAt: "2099-01-01T00:00:00Z" },
      "runAt",
    ],
    ["a malformed runAt", { type: "test.record", payload: {}, runAt: "tomorrow" }, "runAt"],
    ["an id with a space", { id: "a b", type: "test.record", payload: {}, delaySeconds: 1 }, "id"],
    [
      "an id over 128 characters",
      { id: "x".repeat(129), type: "test.record", payload: {}, delaySeconds: 1 },
      "id",
    ],
    [
      "a payload the type's schema refuses",
      { type: "test.record", payload: { failTimes: "two" }, delaySeconds: 1 },
      "payload.failTimes",
    ],
    ["a webhook without a url", { type: "webhook", payload: {}, delaySeconds: 1 }, "payload.url"],
    ["an unknown field", { type: "test.record", payload: {}, delaySeconds: 1, color: "red" }, ""],
    ["a negative delay", { type: "test.record", payload: {}, delaySeconds: -5 }, "delaySeconds"],
  ])("refuses %s with 422 naming the field", async (_, body, path) => {
    const call = asNewTenant();
    const response = await call("POST", "/v1/events", body);
    expect(response.status).toBe(422);
    const errors = problemOf(response).errors as { path: string; message: string }[];
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.map((e) => e.path)).toContain(path);
  });

  it("answers 400 to malformed JSON, 415 to another content type, 413 to a body over 1 MiB", async () => {
    const call = asNewTenant();
    expect(problemOf(await call("POST", "/v1/events", "{not json")).status).toBe(400);
    // An empty body where one is required (found by the bad-input property test).
    expect(problemOf(await call("POST", "/v1/events", "")).status).toBe(400);
    const form = await fetch(`${served.api.base}/v1/events`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...call.auth },
      body: "type=test.record",
    });
    expect(form.status).toBe(415);
    // Sent on fetch's pool of keep-alive connections: the server reads the body to its end before
    // it answers, so the client sees the 413 (not a reset) and the connection stays usable.
    const huge = JSON.stringify({
      type: "test.record",
      payload: { label: "x".repeat(1_100_000) },
      delaySeconds: 1,
    });
    expect(problemOf(await call("POST", "/v1/events", huge)).status).toBe(413);
  });
});

describe("reading, moving and cancelling", () => {
  it("answers 404 for unknown ids, impossible ids and unknown routes", async () => {
    const call = asNewTenant();
    expect(problemOf(await call("GET", "/v1/events/never-was")).status).toBe(404);
    expect((await call("GET", "/v1/events/bad%20id")).status).toBe(404);
    expect((await call("DELETE", "/v1/events/never-was")).status).toBe(404);
    expect((await call("PATCH", "/v1/events/never-was", { delaySeconds: 5 })).status).toBe(404);
    expect(problemOf(await call("GET", "/v1/nothing-here")).status).toBe(404);
  });

  it("reschedules, cancels (twice), then refuses to reschedule a cancelled event with 409", async () => {
    const call = asNewTenant();
    const { json } = await call("POST", "/v1/events", {
      type: "test.record",
      payload: {},
      delaySeconds: 3_600,
    });
    const moved = await call("PATCH", `/v1/events/${json.id}`, { delaySeconds: 7_200 });
    expect(moved.status).toBe(200);
    expect(Date.parse(moved.json.runAt)).toBeGreaterThan(Date.parse(json.runAt));
    expect((await call("PATCH", `/v1/events/${json.id}`, { runAt: "x" })).status).toBe(422);
    const cancelled = await call("DELETE", `/v1/events/${json.id}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.json.status).toBe("cancelled");
    expect((await call("DELETE", `/v1/events/${json.id}`)).status).toBe(200);
    const refused = await call("PATCH", `/v1/events/${json.id}`, { delaySeconds: 5 });
    expect(refused.status).toBe(409);
    expect(problemOf(refused).currentStatus).toBe("cancelled");
  });

  it("refuses to cancel a finished event with 409 naming its state", async () => {
    const call = asNewTenant();
    const { json } = await call("POST", "/v1/events", {
      type: "test.record",
      payload: {},
      delaySeconds: 0,
    });
    const runtime = (await import("../../shared/local/runtime.ts")).startRuntime(served.hg, { tickMs: 100 });
    try {
      await eventually(async () =>
        (await call("GET", `/v1/events/${json.id}`)).json.status === "succeeded" ? true : undefined,
      );
    } finally {
      await runtime.stop();
    }
    const refused = await call("DELETE", `/v1/events/${json.id}`);
    expect(refused.status).toBe(409);
    expect(problemOf(refused).currentStatus).toBe("succeeded");
  });

  it("refuses to cancel a running event with 409, and the event still ends in its own outcome", async () => {
    const call = asNewTenant();
    const id = "running-cancel";
    const gate = signal();
    finish.set(id, gate);
    const created = await call("POST", "/v1/events", {
      id,
      type: "test.block",
      payload: {},
      delaySeconds: 0,
    });
    expect(created.status).toBe(201);
    const runtime = startRuntime(served.hg, { tickMs: 100 });
    try {
      await eventually(
        async () => ((await call("GET", `/v1/events/${id}`)).json.status === "running" ? true : undefined),
        15_000,
        "the event running",
      );
      expect(blockRuns).toEqual([id]);
      const refused = await call("DELETE", `/v1/events/${id}`);
      expect(refused.status).toBe(409);
      expect(problemOf(refused).currentStatus).toBe("running");
      // The refusal changed nothing: still running, and the handler's end decides the outcome.
      expect((await call("GET", `/v1/events/${id}`)).json.status).toBe("running");
      gate.fire();
      const done = await eventually(
        async () => {
          const read = await call("GET", `/v1/events/${id}`);
          return read.json.status === "running" ? undefined : read.json;
        },
        15_000,
        "the event's outcome",
      );
      expect(done).toMatchObject({ id, status: "succeeded", attempts: 1 });
      expect(blockRuns).toEqual([id]);
    } finally {
      gate.fire();
      await runtime.stop();
    }
  });

  it("lists a tenant's events newest first, filtered, with a cursor", async () => {
    const call = asNewTenant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { json } = await call("POST", "/v1/events", {
        type: "test.record",
        payload: { label: `list-${i}` },
        delaySeconds: 9_000,
      });
      ids.push(json.id);
    }
    const first = await call("GET", "/v1/events?status=scheduled&type=test.record&limit=3");
    expect(first.status).toBe(200);
    expect(first.json.events).toHaveLength(3);
    expect(first.json.events.map((e: { id: string }) => e.id)).toEqual(ids.slice(-3).reverse());
    const second = await call(
      "GET",
      `/v1/events?status=scheduled&type=test.record&limit=2&cursor=${first.json.cursor}`,
    );
    expect(second.json.events.map((e: { id: string }) => e.id)).toEqual(ids.slice(-5, -3).reverse());
    expect((await call("GET", "/v1/events?limit=0")).status).toBe(422);
    expect((await call("GET", "/v1/events?status=sleeping")).status).toBe(422);
    expect((await call("GET", "/v1/events?cursor=garbage")).status).toBe(422);
    for (const [query, path] of [
      ["type=Not-A-Type", "type"],
      ["type=", "type"],
      ["scheduleId=..", "scheduleId"],
      ["scheduleId=has%20space", "scheduleId"],
    ]) {
      const refused = await call("GET", `/v1/events?${query}`);
      expect(refused.status).toBe(422);
      expect(problemOf(refused).errors).toEqual([expect.objectContaining({ path })]);
    }
  });

  it("pages through a filtered list without skipping a match", async () => {
    const call = asNewTenant();
    // Newest first: k0 kept, c1 cancelled, k2, k3 kept, ... so a page that fills up part-way
    // through a journal page must not step over the matches left in it.
    const pattern = ["k", "c", "k", "k", "c", "k", "k", "k", "c", "k"];
    const events = pattern.map((kind, i) => ({
      id: `filtered-${i}-${kind}`,
      type: "test.record",
      payload: {},
      delaySeconds: 9_000,
    }));
    const created = await call("POST", "/v1/events/batch", { events: events.slice().reverse() });
    expect(created.json.results.every((r: { status: number }) => r.status === 201)).toBe(true);
    for (const { id } of events.filter(({ id }) => id.endsWith("-c"))) {
      expect((await call("DELETE", `/v1/events/${id}`)).status).toBe(200);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 20; pages++) {
      const page = await call(
        "GET",
        `/v1/events?status=scheduled&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.json.events.map((e: { id: string }) => e.id));
      cursor = page.json.cursor;
      if (!cursor) break;
    }
    expect(seen.sort()).toEqual(
      events
        .map(({ id }) => id)
        .filter((id) => id.endsWith("-k"))
        .sort(),
    );
  });
});

describe("batches, stats, dead letters, health", () => {
  it("gives each item of a batch its own result", async () => {
    const call = asNewTenant();
    const response = await call("POST", "/v1/events/batch", {
      events: [
        { type: "test.record", payload: {}, delaySeconds: 60 },
        { type: "nope", payload: {}, delaySeconds: 60 },
        { id: "batch-dup", type: "test.record", payload: {}, delaySeconds: 60 },
        { id: "batch-dup", type: "test.record", payload: {}, delaySeconds: 60 },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.json.results.map((r: { status: number }) => r.status)).toEqual([201, 422, 201, 422]);
    expect(response.json.results[1].error.errors[0].path).toBe("events[1].type");
    expect((await call("POST", "/v1/events/batch", { events: [] })).status).toBe(422);
    const tooMany = Array.from({ length: 501 }, () => ({
      type: "test.record",
      payload: {},
      delaySeconds: 60,
    }));
    expect((await call("POST", "/v1/events/batch", { events: tooMany })).status).toBe(422);
  });

  it("counts by status and type", async () => {
    const call = asNewTenant();
    expect((await call("GET", "/v1/stats")).json.byStatus).toEqual({});
    for (const delaySeconds of [600, 700, 800]) {
      await call("POST", "/v1/events", { type: "test.record", payload: {}, delaySeconds });
    }
    const { json } = await call("POST", "/v1/events", {
      type: "test.record",
      payload: {},
      delaySeconds: 900,
    });
    await call("DELETE", `/v1/events/${json.id}`);
    const stats = await call("GET", "/v1/stats");
    expect(stats.status).toBe(200);
    // Exact: the tenant is this test's alone.
    expect(stats.json.byStatus).toEqual({ scheduled: 3, cancelled: 1 });
    expect(stats.json.byType["test.record"]).toEqual({ scheduled: 3, cancelled: 1 });
    expect(stats.json.indexSize).toBe(3);
  });

  it("lists dead letters and refuses to replay what is not dead", async () => {
    const call = asNewTenant();
    const list = await call("GET", "/v1/dead-letters");
    expect(list.status).toBe(200);
    expect(Array.isArray(list.json.events)).toBe(true);
    expect((await call("POST", "/v1/dead-letters/never-was/replay")).status).toBe(404);
    const { json } = await call("POST", "/v1/events", {
      type: "test.record",
      payload: {},
      delaySeconds: 60,
    });
    const refused = await call("POST", `/v1/dead-letters/${json.id}/replay`);
    expect(refused.status).toBe(409);
    expect(problemOf(refused).currentStatus).toBe("scheduled");
  });

  it("answers /health with every dependency's check", async () => {
    const call = asNewTenant();
    const health = await call("GET", "/health");
    expect(health.status).toBe(200);
    expect(health.json.status).toBe("ok");
    expect(Object.keys(health.json.checks).sort()).toEqual(["dynamodb", "redis", "sqs"]);
  });

  it("serves its OpenAPI document and a reference page", async () => {
    const call = asNewTenant();
    const doc = await call("GET", "/openapi.json");
    expect(doc.json.openapi).toBe("3.1.0");
    expect(Object.keys(doc.json.paths)).toContain("/v1/events/{id}");
    const page = await fetch(`${served.api.base}/docs`, { headers: call.auth });
    expect(await page.text()).toContain("SwaggerUIBundle");
    expect((await fetch(`${served.api.base}/docs/assets/swagger-ui-bundle.js`)).status).toBe(200);
    expect((await fetch(`${served.api.base}/docs/assets/package.json`)).status).toBe(404);
  });
});
