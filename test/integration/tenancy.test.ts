import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { memberOf, shardOf, tenantDueKey } from "../../shared/engine/keys.ts";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

const TOKENS = { acme: "acme-token-0123456789", globex: "globex-token-0123456789" };
const rec = recorder();
const as = (tenant: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[tenant]}` });

const served = useApiServer(
  {
    HOURGLASS_API_TOKENS: Object.entries(TOKENS)
      .map(([tenant, token]) => `${tenant}:${token}`)
      .join(","),
  },
  { handlers: [rec.handler] },
);

describe("tenancy", () => {
  it("requires a known bearer token", async () => {
    const missing = await served.api.call("GET", "/v1/stats");
    expect(missing.status).toBe(401);
    expect(missing.type).toContain("application/problem+json");
    expect(
      (await served.api.call("GET", "/v1/stats", undefined, { authorization: "Bearer nope-nope-nope-nope" }))
        .status,
    ).toBe(401);
    expect(
      (await served.api.call("GET", "/v1/stats", undefined, { authorization: `Basic ${TOKENS.acme}` }))
        .status,
    ).toBe(401);
    expect((await served.api.call("GET", "/health")).status).toBe(200);
  });

  it("never lets one tenant read, list, move, cancel, replay or count another's events", async () => {
    const created = await served.api.call(
      "POST",
      "/v1/events",
      { id: "shared-id", type: "test.record", payload: {}, delaySeconds: 600 },
      as("acme"),
    );
    expect(created.status).toBe(201);
    const id = created.json.id as string;

    expect((await served.api.call("GET", `/v1/events/${id}`, undefined, as("globex"))).status).toBe(404);
    expect(
      (await served.api.call("PATCH", `/v1/events/${id}`, { delaySeconds: 5 }, as("globex"))).status,
    ).toBe(404);
    expect((await served.api.call("DELETE", `/v1/events/${id}`, undefined, as("globex"))).status).toBe(404);
    expect(
      (await served.api.call("POST", `/v1/dead-letters/${id}/replay`, undefined, as("globex"))).status,
    ).toBe(404);
    const list = await served.api.call("GET", "/v1/events", undefined, as("globex"));
    expect(list.json.events).toEqual([]);
    const stats = await served.api.call("GET", "/v1/stats", undefined, as("globex"));
    expect(stats.json.byStatus).toEqual({});
    expect(stats.json.indexSize).toBe(0);

    // The same client id in another tenant is another event, not a conflict.
    const theirs = await served.api.call(
      "POST",
      "/v1/events",
      { id: "shared-id", type: "test.record", payload: { label: "g" }, delaySeconds: 600 },
      as("globex"),
    );
    expect(theirs.status).toBe(201);
    expect((await served.api.call("GET", `/v1/events/${id}`, undefined, as("acme"))).json.payload).toEqual(
      {},
    );
    expect((await served.api.call("GET", "/v1/stats", undefined, as("acme"))).json.byStatus.scheduled).toBe(
      1,
    );
  });
});

describe("stats are the caller's own (issue 9)", () => {
  it("reports another tenant's overdue backlog to nobody else", async () => {
    const overdue = await served.api.call(
      "POST",
      "/v1/events",
      { id: "late-one", type: "test.record", payload: {}, delaySeconds: 600 },
      as("acme"),
    );
    expect(overdue.status).toBe(201);
    // No dispatcher runs in this file: move the event's due time a minute into the past, as a
    // stalled dispatcher would leave it.
    const { config, redis } = served.hg;
    const member = memberOf("acme", "late-one");
    const due = tenantDueKey(config.keyPrefix, shardOf(member, config.shards), "acme");
    expect(await redis.zadd(due, "XX", "CH", Date.now() - 60_000, "late-one")).toBe(1);
    const mine = await served.api.call("GET", "/v1/stats", undefined, as("acme"));
    expect(mine.json.oldestOverdueMs).toBeGreaterThanOrEqual(59_000);
    const theirs = await served.api.call("GET", "/v1/stats", undefined, as("globex"));
    expect(theirs.json.oldestOverdueMs).toBe(0);
    await served.api.call("DELETE", "/v1/events/late-one", undefined, as("acme"));
  });
});

describe("webhook signing secrets (issue 9)", () => {
  it("gives each tenant its own whsec_ secret, and only its own", async () => {
    const acme = await served.api.call("GET", "/v1/webhook-secret", undefined, as("acme"));
    const globex = await served.api.call("GET", "/v1/webhook-secret", undefined, as("globex"));
    expect(acme.status).toBe(200);
    expect(acme.json.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(globex.json.secret).toMatch(/^whsec_/);
    expect(globex.json.secret).not.toBe(acme.json.secret);
    expect((await served.api.call("GET", "/v1/webhook-secret")).status).toBe(401);
  });

  it("rotates with an overlap in which the previous secret is still handed out and signs", async () => {
    const before = await served.api.call("GET", "/v1/webhook-secret", undefined, as("acme"));
    const rotated = await served.api.call(
      "POST",
      "/v1/webhook-secret/rotate",
      { overlapSeconds: 3600 },
      as("acme"),
    );
    expect(rotated.status).toBe(200);
    expect(rotated.json.generation).toBe(before.json.generation + 1);
    expect(rotated.json.secret).not.toBe(before.json.secret);
    expect(rotated.json.previous.secret).toBe(before.json.secret);
    expect(Date.parse(rotated.json.previous.expiresAt) - Date.now()).toBeGreaterThan(3_500_000);
    // Read back from DynamoDB, as another process (the worker) would.
    const after = await served.api.call("GET", "/v1/webhook-secret", undefined, as("acme"));
    expect(after.json.secret).toBe(rotated.json.secret);
    const signing = await served.hg.signing.signingSecretsFor("acme");
    expect(signing.current).toBe(rotated.json.secret);
    expect(signing.previous?.secret).toBe(before.json.secret);
    // The other tenant's secret did not move.
    const globex = await served.api.call("GET", "/v1/webhook-secret", undefined, as("globex"));
    expect(globex.json.generation).toBe(0);
    // A rotation without a body takes the default overlap; a too-short one is refused.
    expect((await served.api.call("POST", "/v1/webhook-secret/rotate", undefined, as("globex"))).status).toBe(
      200,
    );
    expect(
      (await served.api.call("POST", "/v1/webhook-secret/rotate", { overlapSeconds: 1 }, as("globex")))
        .status,
    ).toBe(422);
  });
});

describe("bad input never produces a 5xx and changes nothing", () => {
  it("holds for random JSON thrown at every write route", async () => {
    const routes: [string, string][] = [
      ["POST", "/v1/events"],
      ["POST", "/v1/events/batch"],
      ["PATCH", "/v1/events/shared-id"],
      ["DELETE", "/v1/events/not-there"],
      ["POST", "/v1/dead-letters/not-there/replay"],
    ];
    const snapshot = async () => {
      const list = await served.api.call("GET", "/v1/events?limit=100", undefined, as("acme"));
      const stats = await served.api.call("GET", "/v1/stats", undefined, as("acme"));
      return JSON.stringify([list.json.events, stats.json.byStatus]);
    };
    const before = await snapshot();
    // Anything but a valid event or a valid new time: either would rightly change the state. A
    // record of only `delaySeconds` (a double, often 0 or small) or only `runAt` can be a valid
    // reschedule of shared-id, so the records carry at least one other key; the last branch
    // covers times alone, both given at once.
    const junk = fc.oneof(
      fc.jsonValue(),
      fc
        .record(
          { type: fc.string(), payload: fc.jsonValue(), runAt: fc.string(), delaySeconds: fc.double() },
          { requiredKeys: [] },
        )
        .filter((body) => "type" in body || "payload" in body),
      fc.record({ events: fc.array(fc.jsonValue(), { maxLength: 5 }) }),
      fc.record({
        runAt: fc.oneof(fc.string(), fc.integer()),
        delaySeconds: fc.oneof(fc.string(), fc.double({ min: -1e9, max: -1 })),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), junk, async ([method, path], body) => {
        const response = await served.api.call(method, path, body, as("acme"));
        expect(response.status, JSON.stringify(response.json)).toBeLessThan(500);
        if (path === "/v1/events/batch" && response.status === 200) {
          for (const result of response.json.results) expect(result.status).toBe(422);
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 150) },
    );
    expect(await snapshot()).toBe(before);
  });
});
