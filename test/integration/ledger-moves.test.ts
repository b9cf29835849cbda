import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import { ReservationStateError } from "../../shared/ledger/errors.ts";
import { type ExpiryScheduler, StockLedger } from "../../shared/ledger/ledger-service.ts";
import type { Reservation } from "../../shared/ledger/model.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Issue 33, finding 7 at the ledger: confirms, cancels and expiries of one SKU that arrive together
 * are written as a few transactions, not one each on the SKU's counter, and every move still
 * happens once: a cancel racing the expiry of the same hold releases it one time, a confirm racing
 * a cancel either sells or releases, and a confirm after expiry is refused. Real DynamoDB Local.
 */
let hg: TestHourglass;
let ledger: StockLedger;
const transactions = { count: 0, sequenceReads: 0 };
const noExpiry: ExpiryScheduler = { schedule: async () => {}, cancel: async () => {} };
let n = 0;
const fresh = () => `m${n++}`;

beforeAll(async () => {
  hg = await testHourglass();
  ledger = hg.ledger!;
  hg.dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === "TransactWriteItemsCommand") transactions.count++;
      if (context.commandName === "BatchGetItemCommand") transactions.sequenceReads++;
      return next(args);
    },
    { step: "initialize", name: "countTransactions" },
  );
});

afterAll(async () => {
  await hg.destroy();
});

async function holds(
  tenant: string,
  sku: string,
  count: number,
  holdSeconds: number,
): Promise<Reservation[]> {
  const made = await Promise.all(
    Array.from({ length: count }, () => ledger.hold(tenant, { items: [{ sku, quantity: 1 }], holdSeconds })),
  );
  return made.map((m) => m.reservation);
}

/** The outcome of a move: done, or the state that refused it. Anything else fails the test. */
function outcome(move: Promise<unknown>): Promise<string> {
  return move.then(
    (result) => (result === "nothing to do" ? "nothing to do" : "done"),
    (error: unknown) => {
      if (error instanceof ReservationStateError) return `refused: ${error.status}`;
      throw error;
    },
  );
}

describe("moves of one SKU's holds, grouped", () => {
  it("writes 60 racing confirms, cancels and expiries as few transactions, each hold moved once; reconcile ok", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "tee", { quantity: 60 });
    const held = await holds(tenant, "tee", 60, 600);
    const before = transactions.count;
    const moves = held.map((r, i) => {
      if (i < 20) {
        // A client's cancel and the hold's own expiry at once.
        return Promise.all([
          outcome(ledger.release(tenant, r.id, "cancelled")),
          outcome(ledger.expire(tenant, r.id, r.expiryEventId)),
        ]);
      }
      if (i < 40) return Promise.all([outcome(ledger.confirm(tenant, r.id))]);
      // A confirm racing a cancel: one of them wins.
      return Promise.all([
        outcome(ledger.confirm(tenant, r.id)),
        outcome(ledger.release(tenant, r.id, "cancelled")),
      ]);
    });
    const results = await Promise.all(moves);
    const written = transactions.count - before;
    let sold = 0;
    results.forEach((result, i) => {
      if (i < 20) {
        // Exactly one released it; the other found it released.
        expect(result.filter((r) => r === "done")).toHaveLength(1);
        expect(["nothing to do", "refused: expired"]).toContain(result.find((r) => r !== "done"));
      } else if (i < 40) {
        expect(result).toEqual(["done"]);
        sold++;
      } else {
        expect(result.filter((r) => r === "done")).toHaveLength(1);
        if (result[0] === "done") {
          expect(result[1]).toBe("refused: confirmed");
          sold++;
        } else expect(result[0]).toBe("refused: cancelled");
      }
    });
    const statuses = await Promise.all(
      held.map(async (r) => (await ledger.getReservation(tenant, r.id)).status),
    );
    expect(statuses.filter((s) => s === "confirmed")).toHaveLength(sold);
    expect(statuses.filter((s) => s === "held")).toHaveLength(0);
    expect(await ledger.stock(tenant, "tee")).toMatchObject({
      onHand: 60,
      held: 0,
      sold,
      available: 60 - sold,
    });
    const entries = (await ledger.ledger(tenant, "tee", 200)).entries;
    expect(entries.filter((e) => e.kind === "CONFIRM")).toHaveLength(sold);
    expect(entries.filter((e) => e.kind === "RELEASE")).toHaveLength(60 - sold);
    expect((await ledger.reconcile(tenant, "tee")).ok).toBe(true);
    // One transaction a move would be 60 and more (each refusal of a moved sequence is another);
    // grouped, the 60 moves are a handful of groups, plus the refused racers' own attempts.
    console.log(`60 racing moves: ${written} transactions`);
    expect(written).toBeLessThan(30);
  }, 60_000);

  it("refuses, within a group, only the confirms of holds that expired; the others sell", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "cap", { quantity: 20 });
    const short = await holds(tenant, "cap", 10, 1);
    const long = await holds(tenant, "cap", 10, 600);
    await new Promise((done) => setTimeout(done, Math.max(0, short.at(-1)!.expiresAt - Date.now() + 50)));
    const before = transactions.count;
    const results = await Promise.all([...short, ...long].map((r) => outcome(ledger.confirm(tenant, r.id))));
    expect(results.slice(0, 10)).toEqual(Array(10).fill("refused: expired"));
    expect(results.slice(10)).toEqual(Array(10).fill("done"));
    // The refused ten came out of the group, which was sent again without them.
    expect(transactions.count - before).toBeLessThan(10);
    expect(await ledger.stock(tenant, "cap")).toMatchObject({ held: 10, sold: 10, available: 0 });
    expect((await ledger.reconcile(tenant, "cap")).ok).toBe(true);
  }, 60_000);

  it("skips the counter read when this process wrote the SKU last, and recovers when another writer moved it", async () => {
    const tenant = fresh();
    const other = new StockLedger(createDynamoClient(), hg.config.tables.ledger, noExpiry, {
      snapshotEvery: 1_000,
    });
    await ledger.receive(tenant, "mug", { quantity: 1 });
    const reads = transactions.sequenceReads;
    for (let i = 0; i < 5; i++) await ledger.receive(tenant, "mug", { quantity: 1 });
    // Each receipt took the number its predecessor left: no read of the counter first.
    expect(transactions.sequenceReads - reads).toBe(0);
    // Another process writes: this one's next commit is refused for the moved number, learns it
    // from the refusal and commits; entries stay numbered without a gap.
    await other.receive(tenant, "mug", { quantity: 10 });
    await ledger.receive(tenant, "mug", { quantity: 1 });
    expect(await ledger.stock(tenant, "mug")).toMatchObject({ onHand: 17, available: 17 });
    const seqs = (await ledger.ledger(tenant, "mug", 100)).entries.map((e) => e.seq);
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect((await ledger.reconcile(tenant, "mug")).ok).toBe(true);
  });
});
