import { afterAll, beforeAll, expect, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import { type ExpiryScheduler, StockLedger } from "../../shared/ledger/ledger-service.ts";
import { signal, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Reconcile reads a SKU's counter and its ledger in separate requests (no read spans both). A
 * change that commits between them must not show as drift: the ledger is read only up to the
 * entry the counter last counted. The ledger property in ledger.test.ts reconciles while
 * expiry events release holds, and failed whenever a release landed in that gap.
 */
let hg: TestHourglass;
const noExpiry: ExpiryScheduler = { schedule: async () => {}, cancel: async () => {} };

beforeAll(async () => {
  hg = await testHourglass();
});
afterAll(async () => {
  await hg?.destroy();
});

it("reports no drift when a release commits between its read of the counter and its read of the ledger", async () => {
  const tenant = "race";
  const dynamo = createDynamoClient();
  /** Armed: the ledger's queries wait for `ledgerRead` once the counter has been read. */
  let armed = false;
  const counterRead = signal();
  const ledgerRead = signal();
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (!armed) return next(args);
      if (context.commandName === "QueryCommand") await ledgerRead.promise;
      const result = await next(args);
      if (context.commandName === "GetItemCommand") counterRead.fire();
      return result;
    },
    { step: "initialize", name: "holdLedgerReads" },
  );
  const reconciling = new StockLedger(dynamo, hg.config.tables.ledger, noExpiry, { snapshotEvery: 1_000 });
  const ledger = new StockLedger(createDynamoClient(), hg.config.tables.ledger, noExpiry, {
    snapshotEvery: 1_000,
  });
  await ledger.receive(tenant, "sku", { quantity: 5 });
  const { reservation } = await ledger.hold(tenant, {
    items: [{ sku: "sku", quantity: 2 }],
    holdSeconds: 600,
  });

  armed = true;
  const report = reconciling.reconcile(tenant, "sku");
  // The counter is read (held 2); the release commits; then the ledger is read (held 0).
  await counterRead.promise;
  await ledger.release(tenant, reservation.id, "cancelled");
  ledgerRead.fire();
  const { ok, drift, counters, ledger: levels } = await report;
  armed = false;

  expect({ ok, drift }).toEqual({ ok: true, drift: { onHand: 0, held: 0, sold: 0, available: 0 } });
  // Both as of the counter's read: the ledger is read up to the entry the counter last counted,
  // so the release that committed in between is in neither, and the next reconcile counts it.
  expect(counters).toEqual(levels);
  expect(levels).toMatchObject({ onHand: 5, held: 2, available: 3 });
  const next = await ledger.reconcile(tenant, "sku");
  expect(next.ok).toBe(true);
  expect(next.ledger).toMatchObject({ onHand: 5, held: 0, available: 5 });
  dynamo.destroy();
});
