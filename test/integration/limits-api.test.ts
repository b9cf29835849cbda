import { describe, expect, it } from "vitest";
import { startRuntime } from "../../shared/local/runtime.ts";
import { eventually } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/**
 * `GET/PUT /v1/types/{type}/limits`: versioned writes (ETag, If-Match, 412), per-tenant (invariant
 * 7), seen by the engine without a restart; pause holds events back as `heldBy: "paused"` and
 * resume runs them; the per-tenant cap on creates answers 429 with Retry-After.
 */
const TOKENS = { acme: "acme-token-0123456789", globex: "globex-token-0123456789" };
const as = (tenant: keyof typeof TOKENS, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${TOKENS[tenant]}`,
  ...extra,
});
const rec = recorder("test.limited");

const served = useApiServer(
  {
    HOURGLASS_API_TOKENS: Object.entries(TOKENS)
      .map(([tenant, token]) => `${tenant}:${token}`)
      .join(","),
  },
  { handlers: [rec.handler] },
);

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${served.api.base}${path}`, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    etag: response.headers.get("etag"),
    retryAfter: response.headers.get("retry-after"),
    type: response.headers.get("content-type") ?? "",
    // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies by path.
    json: (text ? JSON.parse(text) : undefined) as any,
  };
}

describe("type limits API", () => {
  it("is versioned: ETag on read and write, 412 on a stale If-Match that changes nothing", async () => {
    const path = "/v1/types/partner.sync/limits";
    const first = await call("GET", path, undefined, as("acme"));
    expect(first.status).toBe(200);
    expect(first.etag).toBe('"0"');
    expect(first.json).toEqual({ type: "partner.sync", paused: false, version: 0 });

    const set = await call("PUT", path, { ratePerSecond: 50, burst: 10 }, as("acme", { "if-match": '"0"' }));
    expect(set.status).toBe(200);
    expect(set.etag).toBe('"1"');
    expect(set.json).toMatchObject({
      type: "partner.sync",
      paused: false,
      ratePerSecond: 50,
      burst: 10,
      version: 1,
    });

    // Another writer still holding version 0 is refused, and is told what is current.
    const stale = await call("PUT", path, { paused: true }, as("acme", { "if-match": '"0"' }));
    expect(stale.status).toBe(412);
    expect(stale.type).toContain("application/problem+json");
    expect(stale.etag).toBe('"1"');
    expect(stale.json.current).toMatchObject({ ratePerSecond: 50, version: 1 });
    const after = await call("GET", path, undefined, as("acme"));
    expect(after.json).toMatchObject({ paused: false, ratePerSecond: 50, burst: 10, version: 1 });

    // The current ETag works; so do `*` and no If-Match (unconditional). Fields left out are cleared.
    const next = await call("PUT", path, { maxConcurrency: 3 }, as("acme", { "if-match": '"1"' }));
    expect(next.status).toBe(200);
    expect(next.json).toEqual(expect.objectContaining({ maxConcurrency: 3, version: 2 }));
    expect(next.json.ratePerSecond).toBeUndefined();
    expect((await call("PUT", path, { paused: true }, as("acme", { "if-match": "*" }))).etag).toBe('"3"');
    expect((await call("PUT", path, { paused: false }, as("acme"))).etag).toBe('"4"');
    // A version that never existed for a type never set is stale too.
    expect(
      (await call("PUT", "/v1/types/never.set/limits", {}, as("acme", { "if-match": '"7"' }))).status,
    ).toBe(412);
  });

  it("refuses bad limits with 422 naming the field, and changes nothing", async () => {
    const path = "/v1/types/bad.input/limits";
    for (const body of [
      { ratePerSecond: -1 },
      { ratePerSecond: 0 },
      // Below DynamoDB's smallest number (a 503 before), and a rate whose bucket expiry Redis cannot take.
      { ratePerSecond: 1e-300 },
      { ratePerSecond: 5e-324 },
      { ratePerSecond: 1e-20 },
      { burst: 5 },
      { maxConcurrency: 1.5 },
      { maxConcurrency: 0 },
      { paused: "yes" },
      { speed: 3 },
    ]) {
      const response = await call("PUT", path, body, as("acme"));
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.json.errors.length).toBeGreaterThan(0);
    }
    const badMatch = await call("PUT", path, {}, as("acme", { "if-match": "version-1" }));
    expect(badMatch.status).toBe(422);
    expect(badMatch.json.errors[0].path).toBe("If-Match");
    expect((await call("GET", "/v1/types/Not-A-Type/limits", undefined, as("acme"))).status).toBe(404);
    expect((await call("GET", path, undefined, as("acme"))).json.version).toBe(0);
  });

  it("keeps each tenant's limits its own (invariant 7)", async () => {
    const path = "/v1/types/shared.type/limits";
    await call("PUT", path, { paused: true, maxConcurrency: 1 }, as("acme"));
    const theirs = await call("GET", path, undefined, as("globex"));
    expect(theirs.json).toEqual({ type: "shared.type", paused: false, version: 0 });
    // globex's write neither sees nor bumps acme's version.
    expect((await call("PUT", path, { ratePerSecond: 5 }, as("globex", { "if-match": '"0"' }))).status).toBe(
      200,
    );
    expect((await call("GET", path, undefined, as("acme"))).json).toMatchObject({ paused: true, version: 1 });
  });

  it("pause holds events back as heldBy paused (not late), other tenants run; resume runs them, none early", async () => {
    const runtime = startRuntime(served.hg, { tickMs: 100 });
    try {
      const path = "/v1/types/test.limited/limits";
      const paused = await call("PUT", path, { paused: true }, as("acme"));
      expect(paused.status).toBe(200);
      const created = await Promise.all(
        [0, 1, 2].map((i) =>
          call(
            "POST",
            "/v1/events",
            { id: `p${i}`, type: "test.limited", payload: {}, delaySeconds: 0.2 * i },
            as("acme"),
          ),
        ),
      );
      expect(created.map((c) => c.status)).toEqual([201, 201, 201]);
      const other = await call(
        "POST",
        "/v1/events",
        { id: "g0", type: "test.limited", payload: {}, delaySeconds: 0.3 },
        as("globex"),
      );
      expect(other.status).toBe(201);
      await eventually(
        async () => (rec.runsOf("g0").length === 1 ? true : undefined),
        10_000,
        "globex's event",
      );
      const held = await eventually(
        async () => {
          const stats = await call("GET", "/v1/stats", undefined, as("acme"));
          return stats.json.heldBy.paused === 3 ? stats.json : undefined;
        },
        10_000,
        "three events held back as paused",
      );
      expect(held.byStatus.scheduled).toBe(3);
      expect(held.heldByType["test.limited"]).toEqual({ paused: 3 });
      // Held back is not late.
      expect(held.oldestOverdueMs).toBe(0);
      const view = await call("GET", "/v1/events/p0", undefined, as("acme"));
      expect(view.json).toMatchObject({ status: "scheduled", heldBy: "paused", attempts: 0 });
      expect(rec.runs.filter((r) => r.id.startsWith("p"))).toEqual([]);
      // The other tenant's stats do not show acme's held events.
      expect((await call("GET", "/v1/stats", undefined, as("globex"))).json.heldBy).toEqual({});

      const resumed = await call("PUT", path, {}, as("acme", { "if-match": paused.etag! }));
      expect(resumed.status).toBe(200);
      for (const id of ["p0", "p1", "p2"]) {
        await eventually(
          async () => (rec.runsOf(id).length === 1 ? true : undefined),
          30_000,
          `${id} after resume`,
        );
      }
      const runs = rec.runs.filter((r) => r.id.startsWith("p"));
      for (const run of runs) expect(run.startedAt).toBeGreaterThanOrEqual(run.runAt);
      const done = await call("GET", "/v1/events/p0", undefined, as("acme"));
      expect(done.json.heldBy).toBeUndefined();
      expect((await call("GET", "/v1/stats", undefined, as("acme"))).json.heldBy).toEqual({});
    } finally {
      await runtime.stop();
    }
  }, 120_000);
});

describe("per-tenant cap on creates", () => {
  const capped = useApiServer({
    HOURGLASS_API_TOKENS: Object.entries(TOKENS)
      .map(([tenant, token]) => `${tenant}:${token}`)
      .join(","),
    HOURGLASS_TENANT_CREATES_PER_SECOND: "1",
    HOURGLASS_TENANT_CREATES_BURST: "500",
  });

  it("answers 429 with Retry-After beyond the cap, a batch counting each item, and leaves other tenants alone", async () => {
    const events = Array.from({ length: 499 }, (_, i) => ({
      type: "webhook",
      delaySeconds: 3600,
      payload: { url: `https://example.com/${i}` },
    }));
    const batchSent = Date.now();
    const batch = await capped.api.call("POST", "/v1/events/batch", { events }, as("acme"));
    expect(batch.status).toBe(200);
    const one = { type: "webhook", delaySeconds: 3600, payload: { url: "https://example.com/x" } };
    // The batch took all but one token, and one comes back a second: singles ten at a time hit
    // the cap, however long the batch took to store.
    let accepted = 0;
    let refused: Response | undefined;
    for (let round = 0; round < 5 && !refused; round++) {
      const responses = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const response = await fetch(`${capped.api.base}/v1/events`, {
            method: "POST",
            headers: { "content-type": "application/json", ...as("acme") },
            body: JSON.stringify(one),
          });
          await response.arrayBuffer();
          return response;
        }),
      );
      accepted += responses.filter((r) => r.status === 201).length;
      refused = responses.find((r) => r.status !== 201);
    }
    expect(refused?.status).toBe(429);
    // At most the token the batch left and one a second since it was sent.
    expect(accepted).toBeLessThanOrEqual(1 + Math.floor((Date.now() - batchSent) / 1_000));
    expect(refused!.headers.get("content-type")).toContain("application/problem+json");
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Nothing was created by the refused call.
    const stats = await capped.api.call("GET", "/v1/stats", undefined, as("acme"));
    expect(stats.json.byStatus.scheduled).toBe(499 + accepted);
    // Another tenant is not affected.
    expect((await capped.api.call("POST", "/v1/events", one, as("globex"))).status).toBe(201);
    // Tokens come back at the configured rate.
    await new Promise((done) => setTimeout(done, 1_100));
    expect((await capped.api.call("POST", "/v1/events", one, as("acme"))).status).toBe(201);
  });
});
