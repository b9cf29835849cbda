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
