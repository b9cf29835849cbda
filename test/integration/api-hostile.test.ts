import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { recorder } from "../support/recorder.ts";
import { useApiServer } from "../support/server.ts";

/**
 * Bad input gets a 4xx, never a reset or a 5xx: over HTTP, as Node's own fetch (undici, which the
 * project's client uses) sends it, against the real local stack.
 */
const served = useApiServer({ HOURGLASS_API_TOKENS: tokens(40) }, { handlers: [recorder().handler] });

/** Tenants `hostile-0`…: each test sends as a tenant of its own. */
function tokens(count: number): string {
  return Array.from({ length: count }, (_, i) => `hostile-${i}:token-of-hostile-tenant-${i}`).join(",");
}
let next = 0;
const asNewTenant = () => {
  const i = next++;
  return { tenant: `hostile-${i}`, auth: { authorization: `Bearer token-of-hostile-tenant-${i}` } };
};

const oversized = JSON.stringify({
  type: "test.record",
  payload: { label: "x".repeat(1_100_000) },
  delaySeconds: 1,
});

describe("a body over the limit", () => {
  it("is answered 413 to 40 concurrent fetches without a connection reset, and the connections serve the next requests", async () => {
    const { auth } = asNewTenant();
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, async () => {
        const response = await fetch(`${served.api.base}/v1/events`, {
          method: "POST",
          headers: { "content-type": "application/json", ...auth },
          body: oversized,
        });
        await response.arrayBuffer();
        return response.status;
      }),
    );
    const failures = results.flatMap((r) =>
      r.status === "rejected" ? [String((r.reason as Error).cause ?? r.reason)] : [],
    );
    expect(failures, failures.slice(0, 3).join("\n")).toEqual([]);
    expect(results.map((r) => (r as PromiseFulfilledResult<number>).value)).toEqual(Array(40).fill(413));
    // The same pool of keep-alive connections now carries ordinary requests.
    const after = await Promise.allSettled(
      Array.from({ length: 40 }, async () => {
        const response = await fetch(`${served.api.base}/v1/events`, {
          method: "POST",
          headers: { "content-type": "application/json", ...auth },
          body: JSON.stringify({ type: "test.record", payload: {}, delaySeconds: 3_600 }),
        });
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(after.map((r) => (r.status === "fulfilled" ? r.value : String(r.reason)))).toEqual(
      Array(40).fill(201),
    );
  }, 60_000);

  it("is answered 413 when streamed without a content-length, and the connection serves the next request", async () => {
    const { auth } = asNewTenant();
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    const statuses = await Promise.all(
      Array.from({ length: 10 }, async () => {
        let sent = 0;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent === 0)
              controller.enqueue(new TextEncoder().encode('{"type":"test.record","payload":{"label":"'));
            if (sent++ < 20) controller.enqueue(chunk);
            else {
              controller.enqueue(new TextEncoder().encode('"},"delaySeconds":1}'));
              controller.close();
            }
          },
        });
        const response = await fetch(`${served.api.base}/v1/events`, {
          method: "POST",
          headers: { "content-type": "application/json", ...auth },
          body,
          duplex: "half",
        } as RequestInit);
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(statuses).toEqual(Array(10).fill(413));
    const health = await fetch(`${served.api.base}/v1/stats`, { headers: auth });
    expect(health.status).toBe(200);
  }, 60_000);
});

/** One request as a tenant, read as JSON when it is JSON. */
async function send(
  auth: Record<string, string>,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${served.api.base}${path}`, {
    method,
    headers: { ...(body !== undefined && { "content-type": "application/json" }), ...auth, ...headers },
    body,
  });
  const text = await response.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: response.status, json };
}

const firstPath = (json: Record<string, unknown> | undefined) =>
  (json?.errors as { path: string }[] | undefined)?.[0]?.path;

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

describe("payload depth and size", () => {
  it.each([
    [
      "an event with an id",
      (deep: string) =>
        `{"id":"deep-1","type":"test.record","payload":{"label":"x","deep":${deep}},"delaySeconds":60}`,
    ],
    [
      "an event without an id",
      (deep: string) => `{"type":"test.record","payload":{"deep":${deep}},"delaySeconds":60}`,
    ],
    [
      "a webhook body",
      (deep: string) =>
        `{"type":"webhook","payload":{"url":"https://example.com/h","body":${deep}},"delaySeconds":60}`,
    ],
    [
      "an item of a batch",
      (deep: string) => `{"events":[{"type":"test.record","payload":{"deep":${deep}},"delaySeconds":60}]}`,
    ],
  ])("refuses a 20,000-deep payload in %s with 422 naming the field, not a 503", async (what, body) => {
    const { auth } = asNewTenant();
    const path = what === "an item of a batch" ? "/v1/events/batch" : "/v1/events";
    const response = await send(auth, "POST", path, body(nested(20_000)));
    expect(response.status).toBe(422);
    expect(firstPath(response.json)).toMatch(/^(payload|events)/);
    // Nothing was scheduled.
    expect((await send(auth, "GET", "/v1/events")).json?.events).toEqual([]);
  });

  it("accepts a payload nested 50 levels deep", async () => {
    const { auth } = asNewTenant();
    const response = await send(
      auth,
      "POST",
      "/v1/events",
      `{"id":"deep-ok","type":"test.record","payload":{"deep":${nested(50)}},"delaySeconds":60}`,
    );
    expect(response.status).toBe(201);
  });

  it("refuses a payload over the journal's item limit with 413, not a 503, alone or in a batch", async () => {
    const { auth } = asNewTenant();
    // Inside the 1 MiB body limit, over what one DynamoDB item (400 KB) can carry.
    const big = { type: "test.record", payload: { label: "é".repeat(300_000) }, delaySeconds: 60 };
    const alone = await send(auth, "POST", "/v1/events", JSON.stringify({ ...big, id: "big-1" }));
    expect(alone.status).toBe(413);
    expect(firstPath(alone.json)).toBe("payload");
    const batch = await send(
      auth,
      "POST",
      "/v1/events/batch",
      JSON.stringify({ events: [{ type: "test.record", payload: {}, delaySeconds: 60 }, big] }),
    );
    expect(batch.status).toBe(200);
    const results = batch.json?.results as {
      index: number;
      status: number;
      error?: { errors: { path: string }[] };
    }[];
    expect(results.map((r) => [r.index, r.status])).toEqual([
      [0, 201],
      [1, 413],
    ]);
    expect(results[1]?.error?.errors[0]?.path).toBe("events[1].payload");
    expect((await send(auth, "GET", "/v1/events/big-1")).status).toBe(404);
  });
});

describe("forged cursors and prototype keys", () => {
  const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  it.each([
    ["a key of the wrong shape", forge({ pk: "x" })],
    [
      "another tenant's position",
      forge({ pk: "someone-else#e1", tenant: "someone-else", ckey: "000001#e1" }),
    ],
    ["a key with a number where a string belongs", forge({ pk: 5, tenant: "t", ckey: 7 })],
    ["a key with nested values", forge({ pk: { S: "x" }, tenant: { S: "t" }, ckey: { S: "c" } })],
    ["an array", forge([1, 2])],
    ["a huge key", forge({ pk: "p".repeat(1_400), tenant: "t", ckey: "c" })],
  ])("answers %s as a cursor with 422 on every paged list", async (_, cursor) => {
    const { auth } = asNewTenant();
    for (const path of [
      "/v1/events",
      "/v1/events?status=dead",
      "/v1/events?status=scheduled&type=test.record",
      "/v1/dead-letters",
      "/v1/stock/mug/ledger",
    ]) {
      const separator = path.includes("?") ? "&" : "?";
      const response = await send(auth, "GET", `${path}${separator}cursor=${cursor}`);
      expect(response.status, path).toBe(422);
      expect(firstPath(response.json), path).toBe("cursor");
    }
  });

  it("still pages with the cursors it hands out", async () => {
    const { auth } = asNewTenant();
    for (let i = 0; i < 3; i++) {
      await send(
        auth,
        "POST",
        "/v1/events",
        JSON.stringify({ type: "test.record", payload: {}, delaySeconds: 600 }),
      );
      await send(auth, "POST", "/v1/stock/mug/receipts", JSON.stringify({ quantity: 1 }));
    }
    const first = await send(auth, "GET", "/v1/events?limit=2");
    const second = await send(auth, "GET", `/v1/events?limit=2&cursor=${first.json?.cursor}`);
    expect(second.status).toBe(200);
    expect(second.json?.events).toHaveLength(1);
    const ledger = await send(auth, "GET", "/v1/stock/mug/ledger?limit=2");
    const rest = await send(auth, "GET", `/v1/stock/mug/ledger?limit=2&cursor=${ledger.json?.cursor}`);
    expect(rest.status).toBe(200);
    expect(rest.json?.entries).toHaveLength(1);
  });

  it.each(["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "__defineGetter__"])(
    "answers paths ending in the prototype key %s with a 4xx, and /docs/assets/ with 404",
    async (key) => {
      for (const path of [`/docs/${key}`, `/docs/assets/${key}`, `/v1/leases/${key}`, `/v1/events/${key}`]) {
        const response = await fetch(`${served.api.base}${path}`, { headers: asNewTenant().auth });
        await response.arrayBuffer();
        expect(response.status < 500, `${path} → ${response.status}`).toBe(true);
      }
      const docs = await fetch(`${served.api.base}/docs/assets/${key}`);
      await docs.arrayBuffer();
      expect(docs.status).toBe(404);
    },
  );
});

describe("any request at all", () => {
  const prototypeKeys = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf"];
  const segment = fc.oneof(
    fc.constantFrom(...prototypeKeys, "%", "%E0%A4%A", "..%2F..", "%00", "a%20b", "x".repeat(300), ""),
    fc.string({ maxLength: 12 }).map(encodeURIComponent),
    fc.stringMatching(/^[A-Za-z0-9._:-]{1,12}$/),
  );
  const route = fc.constantFrom(
    "/v1/events",
    "/v1/events/{}",
    "/v1/events/batch",
    "/v1/dead-letters",
    "/v1/dead-letters/{}/replay",
    "/v1/stats",
    "/v1/leases/{}/acquire",
    "/v1/leases/{}/renew",
    "/v1/leases/{}/release",
    "/v1/leases/{}",
    "/v1/stock/{}/receipts",
    "/v1/stock/{}",
    "/v1/stock/{}/ledger",
    "/v1/stock/{}/reconcile",
    "/v1/reservations",
    "/v1/reservations/{}",
    "/v1/reservations/{}/confirm",
    "/v1/reservations/{}/cancel",
    "/v1/{}",
    "/docs/{}",
    "/docs/assets/{}",
    "/openapi.json",
    "/{}",
  );
  const hostileValue = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom(
      -1,
      0,
      1.5,
      1e308,
      -1e308,
      2 ** 53 + 1,
      "",
      "1969-12-31T23:59:59Z",
      "2000-01-01T00:00:00Z",
      "9999-12-31T23:59:59Z",
      "\ud800",
      "x".repeat(5_000),
      "webhook",
      "test.record",
      "reservation.expire",
    ),
    fc.integer({ min: -10, max: 4_000_000 }),
  );
  const fields = [
    "type",
    "payload",
    "runAt",
    "delaySeconds",
    "id",
    "maxAttempts",
    "backoff",
    "events",
  ] as const;
  const more = [
    "items",
    "holdSeconds",
    "quantity",
    "owner",
    "ttlSeconds",
    "token",
    "sku",
    "__proto__",
  ] as const;
  const bodyObject = fc.dictionary(fc.constantFrom(...fields, ...more), hostileValue, { maxKeys: 5 });
  const body = fc.oneof(
    bodyObject.map((o) => JSON.stringify(o)),
    fc
      .record({
        items: fc.array(fc.record({ sku: hostileValue, quantity: hostileValue }), { maxLength: 3 }),
        holdSeconds: hostileValue,
      })
      .map((o) => JSON.stringify(o)),
    fc.record({ events: fc.array(bodyObject, { maxLength: 4 }) }).map((o) => JSON.stringify(o)),
    fc.json({ maxDepth: 4 }),
    fc.constantFrom(
      "",
      "{",
      "[",
      "null",
      "[]",
      '"\ud800"',
      '{"__proto__":{"polluted":1}}',
      "\u0000",
      `{"a":${"[".repeat(200)}`,
    ),
    fc
      .constantFrom(60, 65, 2_000, 20_000)
      .map((d) => `{"type":"test.record","payload":${nested(d)},"delaySeconds":5}`),
  );
  const forgedCursor = fc
    .jsonValue({ maxDepth: 2 })
    .map((v) => Buffer.from(JSON.stringify(v)).toString("base64url"));
  const query = fc.array(
    fc.tuple(
      fc.constantFrom("limit", "cursor", "status", "type", "count", "x"),
      fc.oneof(
        forgedCursor,
        fc.constantFrom("1e400", "-1", "NaN", "0", "101", "dead", "scheduled", "%"),
        fc.string({ maxLength: 10 }).map(encodeURIComponent),
      ),
    ),
    { maxLength: 3 },
  );
  const request = fc.record({
    method: fc.oneof(
      { weight: 3, arbitrary: fc.constant("GET") },
      { weight: 3, arbitrary: fc.constant("POST") },
      { weight: 1, arbitrary: fc.constantFrom("PUT", "PATCH", "DELETE", "HEAD", "OPTIONS") },
    ),
    route,
    segment,
    query,
    body,
    // Mostly well-formed envelopes, so most requests reach the routes and the services behind them.
    contentType: fc.oneof(
      { weight: 6, arbitrary: fc.constant("application/json") },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          "application/json; charset=utf-16",
          "application/problem+json",
          "text/plain",
          "multipart/form-data; boundary=x",
          "",
        ),
      },
    ),
    auth: fc.oneof(
      { weight: 6, arbitrary: fc.constant("mine") },
      {
        weight: 1,
        arbitrary: fc.constantFrom("none", "Bearer", "Bearer wrong-token-of-16-chars", "Basic eDp5"),
      },
    ),
  });

  it("never answers 5xx to random hostile paths, queries, headers and bodies", async () => {
    const { auth } = asNewTenant();
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const path = r.route.replace("{}", r.segment);
        const search = r.query.map(([k, v]) => `${k}=${v}`).join("&");
        const headers: Record<string, string> = {};
        if (r.contentType) headers["content-type"] = r.contentType;
        if (r.auth === "mine") Object.assign(headers, auth);
        else if (r.auth !== "none") headers.authorization = r.auth;
        const withBody = r.method !== "GET" && r.method !== "HEAD";
        let status: number;
        try {
          const response = await fetch(`${served.api.base}${path}${search ? `?${search}` : ""}`, {
            method: r.method,
            headers,
            body: withBody ? r.body : undefined,
          });
          await response.arrayBuffer();
          status = response.status;
        } catch (error) {
          // A URL fetch itself refuses never reaches the server; anything else is a failure.
          if (error instanceof TypeError && !(error as Error & { cause?: unknown }).cause) return;
          throw error;
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        expect(status, `${r.method} ${path}?${search} ${withBody ? r.body.slice(0, 200) : ""}`).toBeLessThan(
          500,
        );
      }),
      { numRuns: 400, endOnFailure: true },
    );
    // The run reached the routes, not only the router's 404 and the 401 of a missing token.
    expect([...statuses.keys()].filter((s) => s !== 404 && s !== 401).length).toBeGreaterThan(3);
  }, 120_000);
});
