import { describe, expect, it } from "vitest";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { useApiServer } from "../support/server.ts";

/**
 * Issue 33, finding 7: holds of one hot SKU that expire together come back together, as a client
 * sees them through `GET /v1/stock/{sku}`, and the ledger stays recomputable (invariant 5). The
 * whole local stack: HTTP API, DynamoDB Local ledger, expiry events through the dispatcher, the
 * SQS emulator and the worker.
 */
const served = useApiServer();
const call = (method: string, path: string, body?: unknown) => served.api.call(method, path, body);

const STOCK = 100;
const BUYERS = 300;
/** Long enough that every hold is written before the first expires, even on a loaded machine. */
const HOLD_SECONDS = 15;

async function holdConcurrently(sku: string, n: number) {
  const answers = await Promise.all(
    Array.from({ length: n }, () =>
      call("POST", "/v1/reservations", { items: [{ sku, quantity: 1 }], holdSeconds: HOLD_SECONDS }),
    ),
  );
  const held = answers
    .filter((a) => a.status === 201)
    .map((a) => a.json as { id: string; expiresAt: string });
  const refused = answers.filter((a) => a.status === 409);
  expect(held.length + refused.length, JSON.stringify(answers.find((a) => a.status >= 500))).toBe(n);
  return held;
}

async function ledgerKinds(sku: string): Promise<Record<string, number>> {
  const kinds: Record<string, number> = {};
  let cursor: string | undefined;
  do {
    const page = await call("GET", `/v1/stock/${sku}/ledger?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    for (const entry of page.json.entries as { kind: string }[])
      kinds[entry.kind] = (kinds[entry.kind] ?? 0) + 1;
    cursor = page.json.cursor;
  } while (cursor);
  return kinds;
}

describe("a hot SKU's releases", () => {
  it("brings back every expired hold of 300 concurrent buyers within seconds of their expiry; reconcile stays ok", async () => {
    const sku = "flash-expiry";
    const runtime: Runtime = startRuntime(served.hg, { tickMs: 100 });
    try {
      expect((await call("POST", `/v1/stock/${sku}/receipts`, { quantity: STOCK })).status).toBe(201);
      const started = Date.now();
      const held = await holdConcurrently(sku, BUYERS);
      console.log(`finding 7: ${BUYERS} concurrent holds over HTTP took ${Date.now() - started} ms`);
      expect(held).toHaveLength(STOCK);
      const [sold] = held;
      expect((await call("POST", `/v1/reservations/${sold!.id}/confirm`)).status).toBe(200);
      const lastDue = Math.max(...held.map((h) => Date.parse(h.expiresAt)));
      const firstDue = Math.min(...held.map((h) => Date.parse(h.expiresAt)));
      // Watch the stock as a client does, until the 99 unconfirmed units are all back.
      let backAt: number | undefined;
      const watchUntil = lastDue + 30_000;
      while (Date.now() < watchUntil) {
        const stock = await call("GET", `/v1/stock/${sku}`);
        expect(stock.json.available + stock.json.held + stock.json.sold).toBe(STOCK);
        if (stock.json.available === STOCK - 1) {
          backAt = Date.now();
          break;
        }
        await new Promise((done) => setTimeout(done, 50));
      }
      const lag = backAt === undefined ? Number.POSITIVE_INFINITY : backAt - lastDue;
      console.log(
        `finding 7: ${STOCK - 1} expiries due within ${lastDue - firstDue} ms; all back ${lag} ms after the last was due`,
      );
      // The target is 2 s; the bound is generous for a loaded machine. Each release its own
      // transaction on the SKU's counter, they came back 6 to 17 s after the last was due.
      expect(lag).toBeLessThan(4_000);
      expect(await call("GET", `/v1/stock/${sku}`)).toMatchObject({
        json: { onHand: STOCK, held: 0, sold: 1, available: STOCK - 1 },
      });
      const statuses = await Promise.all(
        held.map(async (h) => (await call("GET", `/v1/reservations/${h.id}`)).json.status as string),
      );
      expect(statuses.filter((s) => s === "expired")).toHaveLength(STOCK - 1);
      expect(statuses.filter((s) => s === "confirmed")).toHaveLength(1);
      // One entry per change, each counted once: no release written twice, none lost.
      expect(await ledgerKinds(sku)).toEqual({ STOCK_IN: 1, HOLD: STOCK, CONFIRM: 1, RELEASE: STOCK - 1 });
      expect((await call("GET", `/v1/stock/${sku}/reconcile`)).json).toMatchObject({ ok: true });
      // The Redis admission count came back with the ledger: the freed units can be held again.
      const again = await holdConcurrently(sku, STOCK);
      expect(again).toHaveLength(STOCK - 1);
    } finally {
      await runtime.stop();
    }
  }, 120_000);
});
