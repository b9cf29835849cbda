import { afterAll, beforeAll, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import { HoldAdmission } from "../../shared/ledger/admission.ts";
import { ledgerFacts } from "../../shared/ledger/ledger-facts.ts";
import { StockLedger } from "../../shared/ledger/ledger-service.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";

let hg: TestHourglass;
beforeAll(async () => { hg = await testHourglass(); });
afterAll(async () => { await hg.destroy(); });

it("profile", async () => {
  const dynamo = createDynamoClient();
  const table = hg.config.tables.ledger;
  for (const withExpiry of [false, true, false]) {
    const ledger = new StockLedger(dynamo, table, withExpiry ? (hg.ledger as any).expiry : { schedule: async () => {}, cancel: async () => {} }, {
      snapshotEvery: 500,
      admission: new HoldAdmission(hg.redis, ledgerFacts(dynamo, table), { prefix: hg.config.keyPrefix }),
    });
    const tenant = `p${Math.random().toString(36).slice(2, 6)}`;
    await ledger.receive(tenant, "hot", { quantity: 100 });
    const t0 = performance.now();
    const r = await Promise.allSettled(Array.from({ length: 300 }, () => ledger.hold(tenant, { items: [{ sku: "hot", quantity: 1 }], holdSeconds: 600 })));
    console.log(withExpiry, performance.now() - t0, r.filter((x) => x.status === "fulfilled").length);
  }
}, 120_000);
