import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { notificationStreamKey } from "../../shared/engine/keys.ts";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { silentLogger } from "../../shared/logger.ts";
import type { NotificationDetail, TransitionNotice } from "../../shared/notifications/model.ts";
import { RedisStreamSink } from "../../shared/notifications/redis-stream.ts";
import { decodeStreamEntry } from "../../shared/notifications/stream-entry.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { type ApiServer, serveApi } from "../support/server.ts";
import { openSse as open, type SseEvent } from "../support/sse.ts";

// Tenants of this file only: tokens name them, so the stream is the caller's own.
const TOKENS = {
  ntfa: "ntfa-token-0123456789abcdef",
  ntfb: "ntfb-token-0123456789abcdef",
  ntfc: "ntfc-token-0123456789abcdef",
  ntfd: "ntfd-token-0123456789abcdef",
  ntfe: "ntfe-token-0123456789abcdef",
};
const auth = (tenant: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[tenant]}` });

const rec = recorder();
let hg: TestHourglass;
let api: ApiServer;
let runtime: Runtime;

beforeAll(async () => {
  hg = await testHourglass(
    {
      HOURGLASS_API_TOKENS: Object.entries(TOKENS)
        .map(([tenant, token]) => `${tenant}:${token}`)
        .join(","),
      HOURGLASS_BACKOFF_BASE_MS: "50",
      HOURGLASS_BACKOFF_MAX_MS: "100",
      HOURGLASS_NOTIFY_STREAM_MAXLEN: "100",
      HOURGLASS_STREAM_CLIENTS_PER_TENANT: "4",
    },
    { handlers: [rec.handler] },
  );
  api = await serveApi(hg);
  runtime = startRuntime(hg, { tickMs: 100 });
});

// Every stream a test opened is closed after it, even when it fails, so the server can close.
const streams: Awaited<ReturnType<typeof open>>[] = [];
async function openSse(...args: Parameters<typeof open>) {
  const stream = await open(...args);
  streams.push(stream);
  return stream;
}

afterAll(async () => {
  await Promise.all(streams.map((s) => s.close()));
  await runtime?.stop();
  await api?.close();
  await hg?.destroy();
});

const details = (events: readonly SseEvent[]) =>
  events.filter((e) => e.id !== undefined).map((e) => JSON.parse(e.data) as NotificationDetail);
const transitionsOf = (events: readonly SseEvent[], id: string) =>
  details(events)
    .filter((d) => d.id === id)
    .map((d) => d.transition);
const streamUrl = (query = "") => `${api.base}/v1/events/stream${query}`;

async function schedule(tenant: keyof typeof TOKENS, body: unknown) {
  const response = await api.call("POST", "/v1/events", body, auth(tenant));
  expect(response.status).toBe(201);
  return response.json.id as string;
}

describe("notifications over the event stream (SSE, real HTTP)", () => {
  it("delivers every transition of each lifecycle once and in order, to the caller's tenant only, and a reconnect misses nothing", async () => {
    const a = await openSse(streamUrl(), auth("ntfa"));
    const b = await openSse(streamUrl(), auth("ntfb"));
    expect(a.status).toBe(200);
    expect(a.response.headers.get("content-type")).toContain("text/event-stream");
    await a.until((events) => events.some((e) => e.event === "ready"));
    await b.until((events) => events.some((e) => e.event === "ready"));

    // Fails once, then succeeds: retried with the error, dispatched again, started again.
    const flaky = await schedule("ntfa", {
      type: "test.record",
      delaySeconds: 0.5,
      payload: { failTimes: 1 },
    });
    // Moved, then cancelled before it runs.
    const later = await schedule("ntfa", { type: "test.record", delaySeconds: 600, payload: {} });
    const moved = await api.call("PATCH", `/v1/events/${later}`, { delaySeconds: 900 }, auth("ntfa"));
    expect(moved.status).toBe(200);
    const cancelled = await api.call("DELETE", `/v1/events/${later}`, undefined, auth("ntfa"));
    expect(cancelled.status).toBe(200);
    // Straight to the dead letters.
    const doomed = await schedule("ntfa", {
      type: "test.record",
      delaySeconds: 0.5,
      payload: { fatal: true },
    });

    await a.until(
      (events) =>
        transitionsOf(events, flaky).includes("succeeded") && transitionsOf(events, doomed).includes("dead"),
      20_000,
      "the outcomes",
    );
    // Room for a duplicate to show up, if one were going to.
    await new Promise((resolve) => setTimeout(resolve, 700));

    // Due within the look-ahead, so dispatched at once; the retry's backoff is short, so it is
    // dispatched by the worker directly.
    expect(transitionsOf(a.events, flaky)).toEqual([
      "scheduled",
      "dispatched",
      "started",
      "retrying",
      "dispatched",
      "started",
      "succeeded",
    ]);
    expect(transitionsOf(a.events, later)).toEqual(["scheduled", "rescheduled", "cancelled"]);
    expect(transitionsOf(a.events, doomed)).toEqual(["scheduled", "dispatched", "started", "dead"]);

    const flakyDetails = details(a.events).filter((d) => d.id === flaky);
    expect(flakyDetails.map((d) => [d.transition, d.attempt, d.status])).toEqual([
      ["scheduled", 0, "scheduled"],
      ["dispatched", 0, "dispatched"],
      ["started", 1, "running"],
      ["retrying", 1, "retrying"],
      ["dispatched", 1, "dispatched"],
      ["started", 2, "running"],
      ["succeeded", 2, "succeeded"],
    ]);
    for (const d of flakyDetails) {
      expect(d.tenant).toBe("ntfa");
      expect(d.type).toBe("test.record");
      expect(Date.parse(d.time)).toBeGreaterThan(0);
    }
    expect(flakyDetails.find((d) => d.transition === "retrying")?.error).toContain("told to fail attempt 1");
    expect(details(a.events).find((d) => d.id === doomed && d.transition === "dead")?.error).toContain(
      "told to fail for good",
    );
    const rescheduled = details(a.events).find((d) => d.id === later && d.transition === "rescheduled");
    expect(rescheduled?.type).toBe("test.record"); // looked up at flush time
    // Stream ids increase: the order of the stream is the order of the transitions.
    const ids = a.events.filter((e) => e.id).map((e) => e.id!);
    expect([...ids].sort(compareStreamIds)).toEqual(ids);

    // Tenant B saw nothing of A's.
    expect(details(b.events)).toEqual([]);
    const own = await schedule("ntfb", { type: "test.record", delaySeconds: 600, payload: {} });
    await b.until((events) => transitionsOf(events, own).includes("scheduled"), 10_000, "B's own event");
    expect(details(b.events).every((d) => d.tenant === "ntfb" && d.id === own)).toBe(true);
    expect(details(a.events).some((d) => d.id === own)).toBe(false);

    // A reconnect after the third entry gets everything after it, and nothing before it.
    await a.close();
    const seen = a.events.filter((e) => e.id !== undefined);
    const resumed = await openSse(streamUrl(), { ...auth("ntfa"), "last-event-id": seen[2]!.id! });
    await resumed.until(
      (events) => events.filter((e) => e.id).length >= seen.length - 3,
      10_000,
      "the replay",
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(resumed.events.filter((e) => e.id).map((e) => [e.id, e.data])).toEqual(
      seen.slice(3).map((e) => [e.id, e.data]),
    );
    expect(resumed.events.some((e) => e.event === "gap")).toBe(false);
    // The same resume through the query string (EventSource cannot set a header on its first try).
    const byQuery = await openSse(streamUrl(`?lastEventId=${seen[2]!.id}&id=${flaky}`), auth("ntfa"));
    await byQuery.until(
      (events) => transitionsOf(events, flaky).includes("succeeded"),
      10_000,
      "flaky's replay",
    );
    expect(transitionsOf(byQuery.events, flaky)).toEqual(
      details(seen.slice(3))
        .filter((d) => d.id === flaky)
        .map((d) => d.transition),
    );
    expect(details(byQuery.events).every((d) => d.id === flaky)).toBe(true);
    await Promise.all([resumed.close(), byQuery.close(), b.close()]);
  }, 40_000);

  it("filters by type, id and schedule", async () => {
    const all = await openSse(streamUrl(), auth("ntfc"));
    const byType = await openSse(streamUrl("?type=webhook"), auth("ntfc"));
    const bySchedule = await openSse(streamUrl("?schedule=nightly"), auth("ntfc"));
    for (const s of [all, byType, bySchedule]) await s.until((e) => e.some((x) => x.event === "ready"));
    const first = await schedule("ntfc", { type: "test.record", delaySeconds: 600, payload: {} });
    const second = await schedule("ntfc", { type: "test.record", delaySeconds: 600, payload: {} });
    await all.until((events) => transitionsOf(events, second).includes("scheduled"), 10_000, "both");
    const byId = await openSse(streamUrl(`?id=${first}&lastEventId=0-0`), auth("ntfc"));
    await byId.until((events) => transitionsOf(events, first).includes("scheduled"), 10_000, "the first");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(details(byId.events).map((d) => d.id)).toEqual([first]);
    expect(details(byType.events)).toEqual([]);
    expect(details(bySchedule.events)).toEqual([]);
    await Promise.all([all.close(), byType.close(), bySchedule.close(), byId.close()]);
  }, 20_000);

  it("follows a schedule's occurrence by its id, as it follows a client's event id", async () => {
    // Occurrence ids carry `@` and `~`, which client ids cannot: the filter takes both kinds.
    const occurrence = "nightly@2026-03-29T01:30:00Z~1.5f0c9a3e71b2";
    const stream = await openSse(streamUrl(`?id=${encodeURIComponent(occurrence)}`), auth("ntfe"));
    expect(stream.status).toBe(200);
    await stream.until((e) => e.some((x) => x.event === "ready"), 10_000, "ready");
    await stream.close();
  }, 20_000);

  it("says so when the capped window no longer holds what followed Last-Event-ID", async () => {
    const tenant = "ntfd";
    const first = await schedule(tenant, { type: "test.record", delaySeconds: 600, payload: {} });
    const probe = await openSse(streamUrl(`?lastEventId=0-0&id=${first}`), auth(tenant));
    await probe.until((events) => transitionsOf(events, first).includes("scheduled"), 10_000, "the first");
    const firstId = probe.events.find((e) => e.id)!.id!;
    await probe.close();
    // Far more than the window (MAXLEN ~100) after it: Redis trims whole nodes of the stream.
    const batch = await api.call(
      "POST",
      "/v1/events/batch",
      {
        events: Array.from({ length: 400 }, () => ({ type: "test.record", delaySeconds: 600, payload: {} })),
      },
      auth(tenant),
    );
    expect(batch.status).toBe(200);
    await eventually(async () => {
      const length = await hg.redis.xlen(`{${hg.config.keyPrefix}:notify:${tenant}}:stream`);
      return length >= 100 ? length : undefined;
    });
    const resumed = await openSse(streamUrl(), { ...auth(tenant), "last-event-id": firstId });
    await resumed.until((events) => events.some((e) => e.event === "gap"), 10_000, "the gap event");
    const gap = JSON.parse(resumed.events.find((e) => e.event === "gap")!.data) as { reason: string };
    expect(gap.reason).toBe("trimmed");
    await resumed.close();
  }, 30_000);

  it("refuses a malformed Last-Event-ID or filter, and more open streams than a tenant may hold", async () => {
    const bad = await api.call("GET", "/v1/events/stream", undefined, {
      ...auth("ntfd"),
      "last-event-id": "x",
    });
    expect(bad.status).toBe(422);
    const badType = await api.call("GET", "/v1/events/stream?type=Not%20A%20Type", undefined, auth("ntfd"));
    expect(badType.status).toBe(422);
    const unauthenticated = await api.call("GET", "/v1/events/stream");
    expect(unauthenticated.status).toBe(401);
    const open = await Promise.all([1, 2, 3, 4].map(() => openSse(streamUrl(), auth("ntfd"))));
    expect(open.map((s) => s.status)).toEqual([200, 200, 200, 200]);
    const fourth = await api.call("GET", "/v1/events/stream", undefined, auth("ntfd"));
    expect(fourth.status).toBe(429);
    // Another tenant is not affected by ntfd's streams.
    const other = await openSse(streamUrl(), auth("ntfc"));
    expect(other.status).toBe(200);
    await Promise.all([...open, other].map((s) => s.close()));
    // Closing gives the slots back.
    await eventually(async () => {
      const again = await openSse(streamUrl(), auth("ntfd"));
      const status = again.status;
      await again.close();
      return status === 200 ? status : undefined;
    });
  }, 20_000);
});

function compareStreamIds(a: string, b: string): number {
  const [am, as] = a.split("-").map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split("-").map(BigInt) as [bigint, bigint];
  return am === bm ? Number(as - bs) : am < bm ? -1 : 1;
}

describe("the tenants' Redis streams (RedisStreamSink, real Redis)", () => {
  const notice = (tenant: string, i: number, extra: Partial<TransitionNotice> = {}): TransitionNotice => ({
    transition: "scheduled",
    tenant,
    id: `s${i}`,
    type: "sink.test",
    attempt: 0,
    status: "scheduled",
    time: 1_000 + i,
    runAt: 2_000 + i,
    ...extra,
  });
  const streamOf = (tenant: string) => notificationStreamKey(hg.config.keyPrefix, tenant);

  it("appends each tenant's notices in publish order, one entry each, readable as published", async () => {
    const sink = new RedisStreamSink(hg.redis, hg.config.keyPrefix, 1_000, silentLogger);
    const batch = [
      notice("sinka", 0),
      notice("sinkb", 1),
      notice("sinka", 2, { transition: "retrying", status: "retrying", error: "boom: 500" }),
      notice("sinka", 3, { transition: "held", status: "scheduled", heldBy: "rate" }),
      // Every field count the script spells out or builds (10 to 18), and text that is not ASCII.
      notice("sinka", 4, {
        transition: "held",
        status: "retrying",
        heldBy: "concurrency",
        error: "Zeitüberschreitung — 超时",
      }),
      notice("sinka", 5, { transition: "held", status: "retrying", heldBy: "paused" }),
      notice("sinka", 6, { runAt: undefined }),
    ];
    await expect(sink.deliver(batch)).resolves.toBe(0);
    const read = async (tenant: string) =>
      (await hg.redis.xrange(streamOf(tenant), "-", "+")).map(([, fields]) =>
        decodeStreamEntry(tenant, fields),
      );
    const a = await read("sinka");
    expect(a.map((d) => [d?.id, d?.transition])).toEqual([
      ["s0", "scheduled"],
      ["s2", "retrying"],
      ["s3", "held"],
      ["s4", "held"],
      ["s5", "held"],
      ["s6", "scheduled"],
    ]);
    expect(a[3]).toMatchObject({
      status: "retrying",
      heldBy: "concurrency",
      error: "Zeitüberschreitung — 超时",
      runAt: new Date(2_004).toISOString(),
    });
    expect(a[4]).toMatchObject({
      status: "retrying",
      heldBy: "paused",
      runAt: new Date(2_005).toISOString(),
    });
    expect(a[5]).toMatchObject({ id: "s6", type: "sink.test", attempt: 0 });
    expect(a[5]!.runAt).toBeUndefined();
    expect(a[1]).toMatchObject({
      error: "boom: 500",
      status: "retrying",
      runAt: new Date(2_002).toISOString(),
    });
    expect(a[2]).toMatchObject({ heldBy: "rate" });
    expect((await read("sinkb")).map((d) => d?.id)).toEqual(["s1"]);
  });

  it("caps the stream, and counts a tenant whose stream cannot be appended to as failed, not the others", async () => {
    const sink = new RedisStreamSink(hg.redis, hg.config.keyPrefix, 100, silentLogger);
    await expect(sink.deliver(Array.from({ length: 1_000 }, (_, i) => notice("sinkc", i)))).resolves.toBe(0);
    // MAXLEN ~ trims whole nodes: about the cap, never the whole thousand.
    expect(await hg.redis.xlen(streamOf("sinkc"))).toBeLessThan(300);
    await hg.redis.set(streamOf("sinkd"), "not a stream");
    await expect(sink.deliver([notice("sinkd", 0), notice("sinkd", 1), notice("sinke", 2)])).resolves.toBe(2);
    expect(await hg.redis.xlen(streamOf("sinke"))).toBe(1);
  });
});
