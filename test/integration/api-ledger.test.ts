import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { useApiServer } from "../support/server.ts";

/** Leases, stock and reservations through the HTTP API and the CLI, on the real local stack. */
const TENANTS = 5;
const served = useApiServer({
  HOURGLASS_API_TOKENS: Array.from(
    { length: TENANTS },
    (_, i) => `ledger-${i}:token-of-ledger-tenant-${i}`,
  ).join(","),
});

/**
 * Every test works as a tenant of its own (lease tokens, stock levels and ledgers start empty),
 * so no assertion depends on which tests ran before it.
 */
let tenants = 0;
function asNewTenant() {
  const i = tenants++;
  if (i >= TENANTS) throw new Error("more tests than tenants: raise TENANTS");
  const token = `token-of-ledger-tenant-${i}`;
  const call = (method: string, path: string, body?: unknown) =>
    served.api.call(method, path, body, { authorization: `Bearer ${token}` });
  const cli = (...args: string[]) => runCli(served.api.base, "--token", token, ...args);
  return { call, cli };
}

describe("leases over HTTP", () => {
  it("acquires, refuses a second owner with 409 naming the owner, renews, releases", async () => {
    const { call } = asNewTenant();
    const first = await call("POST", "/v1/leases/report/acquire", { owner: "a", ttlSeconds: 30 });
    expect(first.status).toBe(200);
    expect(first.json.token).toBe(1);
    const second = await call("POST", "/v1/leases/report/acquire", { owner: "b", ttlSeconds: 30 });
    expect(second.status).toBe(409);
    expect(second.json).toMatchObject({ owner: "a" });
    expect(second.json).not.toHaveProperty("holder");
    // GET names the owner the way acquire does.
    const shown = await call("GET", "/v1/leases/report");
    expect(shown.json).toMatchObject({ held: true, owner: "a", token: 1 });
    expect(shown.json).not.toHaveProperty("holder");
    expect(Date.parse(second.json.expiresAt)).toBe(Date.parse(first.json.expiresAt));
    expect(
      (await call("POST", "/v1/leases/report/renew", { owner: "a", token: 1, ttlSeconds: 60 })).status,
    ).toBe(200);
    expect((await call("POST", "/v1/leases/report/release", { owner: "a", token: 7 })).status).toBe(409);
    expect((await call("POST", "/v1/leases/report/release", { owner: "b", token: 1 })).status).toBe(409);
    const released = await call("POST", "/v1/leases/report/release", { owner: "a", token: 1 });
    expect(released.json).toMatchObject({ held: false, token: 1 });
    expect((await call("GET", "/v1/leases/report")).json.held).toBe(false);
    // The holder asking again gets its own lease back (same token); another owner still gets 409.
    const mine = await call("POST", "/v1/leases/report/acquire", { owner: "a", ttlSeconds: 30 });
    const again = await call("POST", "/v1/leases/report/acquire", { owner: "a", ttlSeconds: 60 });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ owner: "a", token: mine.json.token, alreadyHeld: true });
    expect(Date.parse(again.json.expiresAt)).toBeGreaterThan(Date.parse(mine.json.expiresAt));
    expect((await call("POST", "/v1/leases/report/acquire", { owner: "b", ttlSeconds: 30 })).status).toBe(
      409,
    );
    expect(
      (await call("POST", "/v1/leases/report/release", { owner: "a", token: mine.json.token })).status,
    ).toBe(200);
    expect((await call("POST", "/v1/leases/report/acquire", { owner: "a", ttlSeconds: 0 })).status).toBe(422);
    expect((await call("POST", "/v1/leases/bad%20name/acquire", { owner: "a", ttlSeconds: 5 })).status).toBe(
      404,
    );
  });
});

describe("stock and reservations over HTTP", () => {
  it("receives, holds, names shortages, confirms, cancels, and reconciles", async () => {
    const { call } = asNewTenant();
    expect((await call("POST", "/v1/stock/mug/receipts", { quantity: 3 })).json).toMatchObject({
      onHand: 3,
      available: 3,
    });
    const held = await call("POST", "/v1/reservations", {
      id: "order-1",
      items: [{ sku: "mug", quantity: 2 }],
      holdSeconds: 300,
    });
    expect(held.status).toBe(201);
    expect(held.json).toMatchObject({ id: "order-1", status: "held" });
    expect(
      (
        await call("POST", "/v1/reservations", {
          id: "order-1",
          items: [{ sku: "mug", quantity: 2 }],
          holdSeconds: 300,
        })
      ).status,
    ).toBe(200);
    const short = await call("POST", "/v1/reservations", {
      items: [
        { sku: "mug", quantity: 2 },
        { sku: "cup", quantity: 1 },
      ],
      holdSeconds: 300,
    });
    expect(short.status).toBe(409);
    expect(short.json.shortages).toEqual([
      { sku: "cup", requested: 1, available: 0 },
      { sku: "mug", requested: 2, available: 1 },
    ]);
    expect((await call("GET", "/v1/stock/mug")).json).toMatchObject({
      onHand: 3,
      held: 2,
      available: 1,
    });
    expect((await call("POST", "/v1/reservations/order-1/confirm")).json.status).toBe("confirmed");
    const cancelConfirmed = await call("POST", "/v1/reservations/order-1/cancel");
    expect(cancelConfirmed.status).toBe(409);
    expect(cancelConfirmed.json.currentStatus).toBe("confirmed");
    expect((await call("POST", "/v1/reservations/nope/confirm")).status).toBe(404);
    const tooMany = Array.from({ length: 50 }, (_, i) => ({ sku: `s${i}`, quantity: 1 }));
    expect((await call("POST", "/v1/reservations", { items: tooMany, holdSeconds: 60 })).status).toBe(422);
    const ledger = await call("GET", "/v1/stock/mug/ledger");
    expect(ledger.json.entries.map((e: { kind: string; seq: number }) => [e.seq, e.kind])).toEqual([
      [1, "STOCK_IN"],
      [2, "HOLD"],
      [3, "CONFIRM"],
    ]);
    expect((await call("GET", "/v1/stock/mug/reconcile")).json.ok).toBe(true);
  });
});

describe("the CLI for stock, holds and leases", () => {
  it("receives, holds, confirms, shows the ledger and takes a lease", async () => {
    const { cli } = asNewTenant();
    expect((await cli("stock", "receive", "lamp", "4")).stdout).toContain("available 4");
    const held = JSON.parse((await cli("hold", "--item", "lamp=3", "--for", "120", "--json")).stdout);
    expect(held.status).toBe("held");
    const short = await cli("hold", "--item", "lamp=2", "--for", "120");
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("409");
    expect((await cli("confirm", held.id)).stdout).toContain(`confirmed ${held.id}`);
    const ledger = await cli("stock", "ledger", "lamp", "--reconcile");
    expect(ledger.stdout).toContain("CONFIRM");
    expect(ledger.stdout).toContain("ledger and counters agree");
    const grant = JSON.parse((await cli("lease", "acquire", "cron", "--owner", "me", "--json")).stdout);
    expect(grant.token).toBe(1);
    const released = await cli("lease", "release", "cron", "--owner", "me", "--lease-token", "1");
    expect(released.stdout, released.stderr).toContain("released");
    // Seven CLI processes, each starting Node and tsx: about 20 s alone, over 60 s on a busy machine.
  }, 120_000);
});
