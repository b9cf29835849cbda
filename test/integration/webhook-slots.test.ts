import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Webhook request slots through the whole worker (its own timeout races every handler from the
 * handler's start): a burst to one slow receiver goes through its tenant's slots in turn, and a
 * request that waited for a slot still gets the receiver's whole timeout, or is given back without
 * spending an attempt. Run outside a worker, a test could not see the worker's own timeout.
 */
const HOLD_MS = 300;
const TIMEOUT_MS = 1_000;
const SLOTS = 2;

let hg: TestHourglass;
let runtime: Runtime;
let server: Server;
let base: string;
/** Requests being answered now, and the most seen at once, by tenant (the path's first segment). */
const inFlight = new Map<string, number>();
const mostAtOnce = new Map<string, number>();
const attemptsSeen: string[] = [];
/** What a handler with a 5 s timeout read from `remainingMs()`, at its start and 200 ms later. */
const remaining: number[][] = [];
const remainingProbe = defineHandler(
  "test.remaining",
  z.object({}),
  async (_payload, context) => {
    const first = context.remainingMs();
    await new Promise((resolve) => setTimeout(resolve, 200));
    remaining.push([first, context.remainingMs()]);
  },
  { timeoutMs: 5_000 },
);

beforeAll(async () => {
  server = createServer((req, res) => {
    const tenant = req.url!.split("/")[1]!;
    const now = (inFlight.get(tenant) ?? 0) + 1;
    inFlight.set(tenant, now);
    mostAtOnce.set(tenant, Math.max(mostAtOnce.get(tenant) ?? 0, now));
    attemptsSeen.push(String(req.headers["hourglass-attempt"]));
    req.resume();
    setTimeout(() => {
      inFlight.set(tenant, inFlight.get(tenant)! - 1);
      res.writeHead(204).end();
    }, HOLD_MS);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  hg = await testHourglass(
    {
      HOURGLASS_WEBHOOK_ALLOW_PRIVATE: "true",
      HOURGLASS_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      HOURGLASS_WEBHOOK_REQUESTS_PER_ORIGIN: String(SLOTS),
      HOURGLASS_BACKOFF_BASE_MS: "50",
      HOURGLASS_BACKOFF_MAX_MS: "100",
    },
    { handlers: [remainingProbe] },
  );
  runtime = startRuntime(hg, { tickMs: 100, maxInFlight: 50 });
});

afterAll(async () => {
  await runtime?.stop();
  await hg?.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("webhook request slots in the worker", () => {
  it("sends a burst to one slow receiver in turn, none timed out and no attempt spent on waiting", async () => {
    const tenant = freshTenant("slots");
    const count = 12;
    // 12 requests of 300 ms through 2 slots take 1.8 s: the last wait longer than the attempt may
    // (its 2 s less the request's own 1 s), so they are given back and come again; maxAttempts 1
    // would bury any that timed out or spent an attempt waiting.
    const ids = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        hg.events
          .schedule(tenant, {
            type: "webhook",
            delaySeconds: 0.3,
            maxAttempts: 1,
            payload: { url: `${base}/${tenant}/${i}`, body: { i } },
          })
          .then((result) => result.event.id),
      ),
    );
    const finals = await eventually(
      async () => {
        const events = await Promise.all(ids.map((id) => hg.events.get(tenant, id)));
        return events.every((e) => e && (e.status === "succeeded" || e.status === "dead"))
          ? events
          : undefined;
      },
      30_000,
      "every webhook to finish",
    ).catch(async (error: unknown) => {
      // Where each one stands, for whoever reads the failure.
      const events = await Promise.all(ids.map((id) => hg.events.get(tenant, id)));
      throw new Error(
        `${(error as Error).message}: ${JSON.stringify(events.map((e) => [e?.status, e?.attempts, e?.lastError]))}`,
      );
    });
    expect(finals.map((e) => e!.status)).toEqual(Array(count).fill("succeeded"));
    expect(finals.map((e) => e!.attempts)).toEqual(Array(count).fill(1));
    expect(mostAtOnce.get(tenant)).toBe(SLOTS);
    expect(attemptsSeen.filter((a) => a !== "1")).toEqual([]);
  });

  it("tells a handler the time its attempt has left, as the worker's timeout counts it", async () => {
    const tenant = freshTenant("remaining");
    const { event } = await hg.events.schedule(tenant, {
      type: "test.remaining",
      delaySeconds: 0.1,
      payload: {},
    });
    await eventually(async () =>
      (await hg.events.get(tenant, event.id))?.status === "succeeded" ? true : undefined,
    );
    const [[first, later]] = remaining as [[number, number]];
    expect(first).toBeLessThanOrEqual(5_000);
    expect(first).toBeGreaterThan(4_000);
    expect(first - later).toBeGreaterThanOrEqual(190);
  });
});
