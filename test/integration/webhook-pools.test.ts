import { createServer, type Server, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HandlerContext } from "../../shared/handlers/registry.ts";
import { WebhookSigning } from "../../shared/handlers/signing.ts";
import { webhookHandler, webhookPayload } from "../../shared/handlers/webhook.ts";
import { WebhookAgents } from "../../shared/handlers/webhook-agents.ts";
import { silentLogger } from "../../shared/logger.ts";

/**
 * Webhooks share keep-alive sockets per tenant, at most `socketsPerOrigin` to one origin: a burst
 * reuses a few connections instead of opening one per request, a request waiting for a socket is
 * not timed out for it, and one tenant's slow receiver never takes another tenant's sockets.
 */
const signing = new WebhookSigning("a-test-master-secret-of-enough-length", undefined, Date.now, 0);
const policy = { allowPrivate: true, allowLoopback: true, refusedPorts: new Set<number>() };

let server: Server;
let base: string;
/** Requests being answered now, the most at once, and the connections the server accepted. */
const seen = { now: 0, most: 0, connections: 0, byTenant: new Map<string, number>() };
/** `/hold` requests wait here until the test lets them go. */
const held: ServerResponse[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/hold") {
        held.push(res);
        return;
      }
      seen.now++;
      seen.most = Math.max(seen.most, seen.now);
      const tenant = String(req.headers["x-tenant"]);
      seen.byTenant.set(tenant, (seen.byTenant.get(tenant) ?? 0) + 1);
      setTimeout(
        () => {
          seen.now--;
          res.writeHead(204).end();
        },
        Number(new URL(req.url!, "http://x").searchParams.get("ms") ?? 0),
      );
    });
  });
  server.on("connection", () => seen.connections++);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const context = (tenant: string, id: string, signal = new AbortController().signal): HandlerContext => ({
  id,
  tenant,
  attempt: 1,
  runAt: new Date(),
  logger: silentLogger,
  signal,
});

describe("webhook connection pools", () => {
  it("sends a burst to one origin over at most socketsPerOrigin connections, none timed out while waiting its turn", async () => {
    const agents = new WebhookAgents(2);
    // Each request takes 150 ms at the receiver; ten through two sockets take about 750 ms, far
    // beyond the 400 ms timeout, which must count from the socket, not from the request's creation.
    const handler = webhookHandler({ signing, policy, timeoutMs: 400, agents });
    Object.assign(seen, { now: 0, most: 0, connections: 0 });
    const payload = webhookPayload.parse({ url: `${base}/slow?ms=150`, headers: { "x-tenant": "a" } });
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => handler.run(payload, context("a", `evt-${i}`))),
    );
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(seen.most).toBe(2);
    expect(seen.connections).toBe(2);
    agents.destroy();
  });

  it("still times out a receiver that does not answer within timeoutMs of getting the request", async () => {
    const agents = new WebhookAgents(2);
    const handler = webhookHandler({ signing, policy, timeoutMs: 300, agents });
    const started = Date.now();
    const error = await handler
      .run(webhookPayload.parse({ url: `${base}/hold` }), context("a", "evt-hold"))
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/timed out/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(Date.now() - started).toBeLessThan(2_000);
    for (const res of held.splice(0)) res.destroy();
    agents.destroy();
  });

  it("gives each tenant its own sockets: one whose receiver hangs does not hold up another's", async () => {
    const agents = new WebhookAgents(2);
    const handler = webhookHandler({ signing, policy, timeoutMs: 10_000, agents });
    const stop = new AbortController();
    // Tenant "slow" fills both of its sockets (and queues a third) at a receiver that never answers.
    const hanging = Array.from({ length: 3 }, (_, i) =>
      handler
        .run(webhookPayload.parse({ url: `${base}/hold` }), context("slow", `h-${i}`, stop.signal))
        .catch(() => {}),
    );
    await until(() => held.length === 2);
    const started = Date.now();
    await handler.run(
      webhookPayload.parse({ url: `${base}/fast`, headers: { "x-tenant": "other" } }),
      context("other", "evt-other"),
    );
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(held).toHaveLength(2);
    stop.abort();
    await Promise.all(hanging);
    for (const res of held.splice(0)) res.destroy();
    agents.destroy();
  });

  it("closes the least recently used idle pools past maxIdleTenants, never one with a request in flight", async () => {
    const agents = new WebhookAgents(1, 2);
    const stop = new AbortController();
    const busy = agents.agentFor("busy", "http:");
    const hanging = webhookHandler({ signing, policy, timeoutMs: 10_000, agents })
      .run(webhookPayload.parse({ url: `${base}/hold` }), context("busy", "evt-busy", stop.signal))
      .catch(() => {});
    await until(() => held.length === 1);
    const idle = agents.agentFor("idle", "http:");
    agents.agentFor("third", "http:");
    // "busy" was the least recently used, but has a request in flight: "idle" went instead.
    expect(agents.size).toBe(2);
    expect(agents.agentFor("busy", "http:")).toBe(busy);
    expect(agents.agentFor("idle", "http:")).not.toBe(idle);
    stop.abort();
    await hanging;
    for (const res of held.splice(0)) res.destroy();
    agents.destroy();
  });
});

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((done) => setTimeout(done, 10));
  }
}
