import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { hourOf, metricsKey } from "../../shared/metrics-store/keys.ts";
import { eventually } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

const rec = recorder();
const served = useApiServer(
  { HOURGLASS_API_TOKENS: "alpha:token-alpha-0123456789,beta:token-beta-0123456789" },
  { handlers: [rec.handler] },
);
const alpha = { authorization: "Bearer token-alpha-0123456789" };
const beta = { authorization: "Bearer token-beta-0123456789" };
let runtime: Runtime;

beforeAll(() => {
  runtime = startRuntime(served.hg, { tickMs: 100 });
});
afterAll(async () => {
  await runtime?.stop();
});

describe("GET /v1/metrics", () => {
  it("counts created, started, succeeded and failed per minute and type, with lateness, for the caller only", async () => {
    const { api, hg } = served;
    const ok = await api.call(
      "POST",
      "/v1/events",
      { type: "test.record", delaySeconds: 1, payload: {} },
      alpha,
    );
    const bad = await api.call(
      "POST",
      "/v1/events",
      { type: "test.record", delaySeconds: 1, payload: { fatal: true } },
      alpha,
    );
    expect([ok.status, bad.status]).toEqual([201, 201]);
    await eventually(async () => (await hg.events.get("alpha", bad.json.id)).status === "dead" || undefined);
    // The journal says dead before the worker records the outcome (it finishes the index write
    // first), so wait until both outcomes are recorded, not only until the status reads dead.
    await eventually(async () => {
      await hg.metrics.flush();
      const { json } = await api.call("GET", "/v1/metrics", undefined, alpha);
      const type = json.types?.["test.record"];
      const total = (s: number[] | undefined) => (s ?? []).reduce((a, b) => a + b, 0);
      return (type && total(type.succeeded) + total(type.failed) >= 2) || undefined;
    });

    const { status, json } = await api.call("GET", "/v1/metrics", undefined, alpha);
    expect(status).toBe(200);
    expect(json.window).toBe("1h");
    expect(json.total.created).toHaveLength(60);
    const type = json.types["test.record"];
    const sum = (series: number[]) => series.reduce((a, b) => a + b, 0);
    expect(sum(type.created)).toBe(2);
    expect(sum(type.started)).toBe(2);
    expect(sum(type.succeeded)).toBe(1);
    expect(sum(type.failed)).toBe(1);
    expect(type.lateness.lastHour.count).toBe(2);
    expect(type.lateness.lastDay.count).toBe(2);
    expect(type.lateness.lastHour.p99Ms).toBeGreaterThanOrEqual(0);
    expect(type.lateness.histogram.reduce((a: number, b: { count: number }) => a + b.count, 0)).toBe(2);

    const day = await api.call("GET", "/v1/metrics?window=24h", undefined, alpha);
    expect(day.json.total.created).toHaveLength(1_440);
    expect(sum(day.json.total.created)).toBe(2);

    const other = await api.call("GET", "/v1/metrics", undefined, beta);
    expect(other.json.types).toEqual({});
    expect(sum(other.json.total.created)).toBe(0);
  });

  it("counts an attempt given back (a dependency unavailable) as given back, not as failed", async () => {
    const { api, hg } = served;
    const created = await api.call(
      "POST",
      "/v1/events",
      { type: "test.record", delaySeconds: 1, payload: { unavailableRuns: 2 } },
      beta,
    );
    expect(created.status).toBe(201);
    await eventually(
      async () => (await hg.events.get("beta", created.json.id)).status === "succeeded" || undefined,
      20_000,
    );
    const sum = (series: number[] | undefined) => (series ?? []).reduce((a, b) => a + b, 0);
    const type = await eventually(async () => {
      await hg.metrics.flush();
      const { json } = await api.call("GET", "/v1/metrics", undefined, beta);
      const counts = json.types?.["test.record"];
      return (counts && sum(counts.succeeded) === 1 && counts) || undefined;
    });
    expect(sum(type.started)).toBe(3);
    expect(sum(type.givenBack)).toBe(2);
    expect(sum(type.failed)).toBe(0);
    // Given back means not counted: the run that succeeded was the event's first attempt.
    expect(rec.runsOf(created.json.id).map((run) => run.attempt)).toEqual([1, 1, 1]);
  });

  it("keeps its keys on the tenant's hash tag, with an expiry (they are not part of the index)", async () => {
    const { hg } = served;
    const key = metricsKey(hg.config.keyPrefix, "alpha", hourOf(Date.now()));
    expect(key.startsWith(`{${hg.config.keyPrefix}:metrics:alpha}`)).toBe(true);
    const ttl = await hg.redis.pttl(key);
    expect(ttl).toBeGreaterThan(24 * 3_600_000);
    expect(ttl).toBeLessThanOrEqual(25 * 3_600_000);
  });

  it("refuses an unknown window with a 422 naming the field", async () => {
    const { status, json } = await served.api.call("GET", "/v1/metrics?window=1w", undefined, alpha);
    expect(status).toBe(422);
    expect(json.errors[0].path).toBe("window");
  });
});

describe("GET /v1/timeline", () => {
  it("buckets the caller's pending events by due time and type, and shows nobody else's", async () => {
    const { api } = served;
    for (const [type, delaySeconds] of [
      ["test.record", 600],
      ["test.record", 630],
      ["webhook", 2 * 86_400],
    ] as const) {
      const payload = type === "webhook" ? { url: "http://127.0.0.1:9/x" } : {};
      expect((await api.call("POST", "/v1/events", { type, delaySeconds, payload }, alpha)).status).toBe(201);
    }
    const hour = await api.call("GET", "/v1/timeline?horizon=hour", undefined, alpha);
    expect(hour.status).toBe(200);
    expect(hour.json.bucketSeconds).toBe(60);
    expect(hour.json.types["test.record"]).toHaveLength(60);
    expect(hour.json.types["test.record"][9] + hour.json.types["test.record"][10]).toBe(2);
    expect(hour.json.types.webhook).toBeUndefined();

    const week = await api.call("GET", "/v1/timeline?horizon=week", undefined, alpha);
    const total = (series: number[]) => series.reduce((a, b) => a + b, 0);
    expect(total(week.json.types["test.record"])).toBe(2);
    expect(total(week.json.types.webhook)).toBe(1);
    expect(week.json.truncated).toBe(false);

    const other = await api.call("GET", "/v1/timeline?horizon=year", undefined, beta);
    expect(other.json.types).toEqual({});
  });
});
