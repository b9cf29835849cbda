import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import {
  InsufficientStockError,
  LedgerValidationError,
  ReservationConflictError,
  ReservationStateError,
} from "../../shared/ledger/errors.ts";
import { expiryScheduler } from "../../shared/ledger/expiry.ts";
import { StockLedger } from "../../shared/ledger/ledger-service.ts";
import type { Reservation } from "../../shared/ledger/model.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { aroundHoldWrite } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/** Invariant 5: no oversell, every change a ledger entry, counters recomputable. Real DynamoDB Local. */
let hg: TestHourglass;
let ledger: StockLedger;
let n = 0;
const fresh = () => `t${n++}`;

/** A ledger that snapshots every 5 entries and treats entries as settled at once, without expiry events. */
const compactingLedger = () =>
  new StockLedger(
    createDynamoClient(),
    hg.config.tables.ledger,
    { schedule: async () => {}, cancel: async () => {} },
    {
      snapshotEvery: 5,
      settleMs: 0,
    },
  );

/**
 * A DynamoDB client whose next TransactWriteItems misbehaves the way a network does: the request
 * reaches DynamoDB and commits, then the caller sees a timeout (the reply was lost), or sees
 * TransactionInProgressException (what DynamoDB answers an SDK retry that overlaps the first
 * attempt), which the ledger retries as a new transaction.
 */
function faultyDynamo() {
  const client: DynamoDBClient = createDynamoClient();
  const faults = { next: undefined as "lose-reply" | "in-progress" | undefined, fired: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const fault = context.commandName === "TransactWriteItemsCommand" ? faults.next : undefined;
      if (!fault) return next(args);
      faults.next = undefined;
      faults.fired++;
      await next(args);
      throw fault === "lose-reply"
        ? Object.assign(new Error("socket timed out after the request was sent"), { name: "TimeoutError" })
        : Object.assign(new Error("the transaction is being processed"), {
            name: "TransactionInProgressException",
          });
    },
    { step: "build", name: "faultInjection" },
  );
  return { client, faults };
}

beforeAll(async () => {
  hg = await testHourglass({ HOURGLASS_LEDGER_SNAPSHOT_EVERY: "5" });
  ledger = hg.ledger!;
});

afterAll(async () => {
  await hg.destroy();
});

describe("stock and holds", () => {
  it("holds all items or none, and names every short SKU with what is available", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "apple", { quantity: 5 });
    await ledger.receive(tenant, "pear", { quantity: 1 });
    const error = await ledger
      .hold(tenant, {
        items: [
          { sku: "apple", quantity: 3 },
          { sku: "pear", quantity: 2 },
          { sku: "plum", quantity: 1 },
        ],
        holdSeconds: 60,
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientStockError);
    expect((error as InsufficientStockError).shortages).toEqual([
      { sku: "pear", requested: 2, available: 1 },
      { sku: "plum", requested: 1, available: 0 },
    ]);
    expect((await ledger.stock(tenant, "apple")).available).toBe(5);
  });

  it("is idempotent by reservation id, and refuses the same id for other items", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "sku", { quantity: 10 });
    const input = { id: "cart-1", items: [{ sku: "sku", quantity: 4 }], holdSeconds: 60 };
    const first = await ledger.hold(tenant, input);
    const again = await ledger.hold(tenant, input);
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.reservation.expiresAt).toBe(first.reservation.expiresAt);
    expect((await ledger.stock(tenant, "sku")).held).toBe(4);
    await expect(
      ledger.hold(tenant, { ...input, items: [{ sku: "sku", quantity: 5 }] }),
    ).rejects.toBeInstanceOf(ReservationConflictError);
    // Another hold length is other content too (as a different delay is for an event): it was
    // answered 200 with the first hold, whose expiry the caller had not asked for.
    await expect(ledger.hold(tenant, { ...input, holdSeconds: 600 })).rejects.toBeInstanceOf(
      ReservationConflictError,
    );
    expect((await ledger.stock(tenant, "sku")).held).toBe(4);
  });

  it("refuses more SKUs than one transaction can carry", async () => {
    const items = Array.from({ length: 50 }, (_, i) => ({ sku: `s${i}`, quantity: 1 }));
    await expect(ledger.hold(fresh(), { items, holdSeconds: 60 })).rejects.toBeInstanceOf(
      LedgerValidationError,
    );
  });

  it("sells exactly 100 of 300 concurrent single-unit holds on a stock of 100", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "hot", { quantity: 100 });
    const results = await Promise.allSettled(
      Array.from({ length: 300 }, () =>
        ledger.hold(tenant, { items: [{ sku: "hot", quantity: 1 }], holdSeconds: 600 }),
      ),
    );
    const won = results.filter((r) => r.status === "fulfilled").length;
    const short = results.filter(
      (r) => r.status === "rejected" && r.reason instanceof InsufficientStockError,
    ).length;
    expect(won).toBe(100);
    expect(short).toBe(200);
    const stock = await ledger.stock(tenant, "hot");
    expect(stock).toMatchObject({ onHand: 100, held: 100, available: 0 });
    const report = await ledger.reconcile(tenant, "hot");
    expect(report.ok).toBe(true);
  }, 120_000);

  it("confirms only a live hold, and releases a hold only once", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "sku", { quantity: 3 });
    const { reservation } = await ledger.hold(tenant, {
      items: [{ sku: "sku", quantity: 2 }],
      holdSeconds: 60,
    });
    await ledger.confirm(tenant, reservation.id);
    expect(await ledger.stock(tenant, "sku")).toMatchObject({ onHand: 3, held: 0, sold: 2, available: 1 });
    await expect(ledger.release(tenant, reservation.id, "cancelled")).rejects.toBeInstanceOf(
      ReservationStateError,
    );
    const other = await ledger.hold(tenant, { items: [{ sku: "sku", quantity: 1 }], holdSeconds: 60 });
    await Promise.allSettled([
      ledger.release(tenant, other.reservation.id, "cancelled"),
      ledger.expire(tenant, other.reservation.id, other.reservation.expiryEventId),
    ]);
    expect(await ledger.stock(tenant, "sku")).toMatchObject({ held: 0, sold: 2, available: 1 });
    expect((await ledger.reconcile(tenant, "sku")).ok).toBe(true);
  });
});

describe("expiry through the engine", () => {
  it("releases an unconfirmed hold by itself, and refuses to confirm it afterwards", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "ticket", { quantity: 2 });
    const { reservation } = await ledger.hold(tenant, {
      items: [{ sku: "ticket", quantity: 2 }],
      holdSeconds: 1,
    });
    expect((await hg.events.get(tenant, reservation.expiryEventId)).type).toBe("reservation.expire");
    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await eventually(
        async () => ((await ledger.stock(tenant, "ticket")).available === 2 ? true : undefined),
        15_000,
        "release",
      );
    } finally {
      await runtime.stop();
    }
    expect((await ledger.getReservation(tenant, reservation.id)).status).toBe("expired");
    const refused = await ledger.confirm(tenant, reservation.id).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ReservationStateError);
    expect((refused as ReservationStateError).status).toBe("expired");
  });

  it.each([
    ["whose reply was lost after it committed", "lose-reply" as const],
    ["that committed and was retried as a new transaction", "in-progress" as const],
  ])("keeps the expiry event of a hold %s", async (_, fault) => {
    const tenant = fresh();
    await ledger.receive(tenant, "lamp", { quantity: 5 });
    const { client, faults } = faultyDynamo();
    const faulty = new StockLedger(client, hg.config.tables.ledger, expiryScheduler(hg.events), {
      snapshotEvery: 100,
    });
    faults.next = fault;
    const outcome = await faulty
      .hold(tenant, { id: `cart-${fault}`, items: [{ sku: "lamp", quantity: 2 }], holdSeconds: 600 })
      .catch((error: unknown) => error);
    expect(faults.fired).toBe(1);
    const stored = await ledger.getReservation(tenant, `cart-${fault}`);
    expect(stored.status).toBe("held");
    // The hold is committed: it must still be released by its expiry event, or it never ends.
    expect((await hg.events.get(tenant, stored.expiryEventId)).status).toBe("scheduled");
    // And the caller learns the hold was made, by this request.
    expect(outcome).toMatchObject({ created: true, reservation: { id: `cart-${fault}`, status: "held" } });
    expect((await ledger.stock(tenant, "lamp")).held).toBe(2);
  });

  // Review of chaos finding 8: a void named one attempt, so another attempt's void (a retry of the
  // same id whose expiry also ran first, or whose shortage left its expiry uncancelled) wrote over
  // it, and the first attempt's write landed after its expiry had finished: held for good.
  it("a hold whose own expiry voided it stays unwritten after another attempt's void, and a redelivered expiry is harmless", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "bulb", { quantity: 5 });
    const reservations = (ledger as unknown as { reservations: Record<string, unknown> }).reservations;
    const expire = (reservations.expire as (t: string, id: string, e: string) => Promise<string>).bind(
      reservations,
    );
    let first = "";
    const restoreWrite = aroundHoldWrite(ledger, async (write, t, reservation, ...rest) => {
      first = reservation.expiryEventId;
      // This attempt's expiry runs first, then another attempt's (request B, the client's retry).
      expect(await expire(t, "cart", first)).toBe("nothing to do");
      expect(await expire(t, "cart", "hold-expire:attempt-b")).toBe("nothing to do");
      return write(t, reservation, ...rest);
    });
    try {
      await expect(
        ledger.hold(tenant, { id: "cart", items: [{ sku: "bulb", quantity: 2 }], holdSeconds: 600 }),
      ).rejects.toBeInstanceOf(ReservationStateError);
    } finally {
      restoreWrite();
    }
    expect((await ledger.stock(tenant, "bulb")).held).toBe(0);
    // Redelivered after it wrote its void: still nothing to do, and nothing held.
    expect(await expire(tenant, "cart", first)).toBe("nothing to do");
    expect((await ledger.stock(tenant, "bulb")).held).toBe(0);
    // A later attempt under the same id holds, and its own expiry releases it.
    const again = await ledger.hold(tenant, {
      id: "cart",
      items: [{ sku: "bulb", quantity: 2 }],
      holdSeconds: 600,
    });
    expect(again.created).toBe(true);
    expect(await expire(tenant, "cart", first)).toBe("nothing to do");
    expect((await ledger.stock(tenant, "bulb")).held).toBe(2);
    expect(await expire(tenant, "cart", again.reservation.expiryEventId)).toBe("released");
    expect((await ledger.stock(tenant, "bulb")).held).toBe(0);
  });

  it("cancels the expiry event of a hold the ledger refused for short stock, which never existed", async () => {
    const tenant = fresh();
    // Without Redis admission, so the refusal comes from the ledger's transaction.
    const ledgerOnly = new StockLedger(
      createDynamoClient(),
      hg.config.tables.ledger,
      expiryScheduler(hg.events),
      {
        snapshotEvery: 100,
      },
    );
    await ledgerOnly.receive(tenant, "rare", { quantity: 1 });
    await expect(
      ledgerOnly.hold(tenant, { items: [{ sku: "rare", quantity: 2 }], holdSeconds: 600 }),
    ).rejects.toBeInstanceOf(InsufficientStockError);
    const { events } = await hg.events.list(tenant, { limit: 10, type: "reservation.expire" });
    expect(events.map((e) => e.status)).toEqual(["cancelled"]);
  });

  it("schedules no expiry event at all for a hold Redis admission refuses", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "rare", { quantity: 1 });
    await expect(
      ledger.hold(tenant, { items: [{ sku: "rare", quantity: 2 }], holdSeconds: 600 }),
    ).rejects.toBeInstanceOf(InsufficientStockError);
    const { events } = await hg.events.list(tenant, { limit: 10, type: "reservation.expire" });
    expect(events).toEqual([]);
  });

  it("cancels the expiry event when a hold is confirmed", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "seat", { quantity: 1 });
    const { reservation } = await ledger.hold(tenant, {
      items: [{ sku: "seat", quantity: 1 }],
      holdSeconds: 600,
    });
    await ledger.confirm(tenant, reservation.id);
    expect((await hg.events.get(tenant, reservation.expiryEventId)).status).toBe("cancelled");
  });
});

describe("the ledger explains the counters", () => {
  it("agrees with the counters and never goes below zero while holds are confirmed, cancelled and released by their real expiry events", async () => {
    // Snapshots every 5 entries, settled immediately, so reconcile exercises snapshot + tail. The
    // expiry scheduler is the real one and the runtime runs throughout: each hold's own expiry
    // event fires at its time, racing the confirms and cancels of the same hold.
    const compacting = new StockLedger(
      createDynamoClient(),
      hg.config.tables.ledger,
      expiryScheduler(hg.events),
      {
        snapshotEvery: 5,
        settleMs: 0,
      },
    );
    const skus = ["a", "b", "c"];
    // Weighted towards acting on holds, so confirms, cancels and expiries often meet a hold that
    // another operation (or its expiry event) has just finished.
    const op = fc.oneof(
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant("receive" as const),
          sku: fc.constantFrom(...skus),
          quantity: fc.integer({ min: 1, max: 5 }),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant("hold" as const),
          items: fc.uniqueArray(
            fc.record({ sku: fc.constantFrom(...skus), quantity: fc.integer({ min: 1, max: 4 }) }),
            { minLength: 1, maxLength: 3, selector: (i) => i.sku },
          ),
          holdSeconds: fc.integer({ min: 1, max: 3 }),
        }),
      },
      {
        weight: 5,
        arbitrary: fc.record({
          kind: fc.constantFrom("confirm" as const, "cancel" as const, "expire" as const),
          pick: fc.nat(),
        }),
      },
    );
    /** Refusals are answers; anything else (a DynamoDB failure, a bug) fails the run. */
    const refusal = (error: unknown) => {
      if (!(error instanceof InsufficientStockError || error instanceof ReservationStateError)) throw error;
    };
    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              ops: fc.array(op, { minLength: 1, maxLength: 6 }),
              pauseMs: fc.integer({ min: 0, max: 700 }),
            }),
            { minLength: 4, maxLength: 10 },
          ),
          async (rounds) => {
            const tenant = fresh();
            const holds: Reservation[] = [];
            for (const round of rounds) {
              // Each round's operations run concurrently, as competing requests would.
              await Promise.all(
                round.ops
                  .map(async (o) => {
                    if (o.kind === "receive") {
                      await compacting.receive(tenant, o.sku, { quantity: o.quantity });
                      return;
                    }
                    if (o.kind === "hold") {
                      const { reservation } = await compacting.hold(tenant, {
                        items: o.items,
                        holdSeconds: o.holdSeconds,
                      });
                      holds.push(reservation);
                      return;
                    }
                    const target = holds[o.pick % Math.max(1, holds.length)];
                    if (!target) return;
                    if (o.kind === "confirm") return void (await compacting.confirm(tenant, target.id));
                    if (o.kind === "cancel")
                      return void (await compacting.release(tenant, target.id, "cancelled"));
                    // A late or repeated delivery of the expiry event: only once the hold's time has come.
                    if (target.expiresAt <= Date.now()) {
                      await compacting.expire(tenant, target.id, target.expiryEventId);
                    }
                  })
                  .map((done) => done.catch(refusal)),
              );
              for (const sku of skus) {
                const report = await compacting.reconcile(tenant, sku);
                expect(report.ok, JSON.stringify(report)).toBe(true);
                for (const levels of [report.counters, report.ledger]) {
                  expect(levels.held, JSON.stringify(report)).toBeGreaterThanOrEqual(0);
                  expect(levels.sold, JSON.stringify(report)).toBeGreaterThanOrEqual(0);
                  expect(levels.available, JSON.stringify(report)).toBeGreaterThanOrEqual(0);
                  expect(levels.held + levels.sold).toBeLessThanOrEqual(levels.onHand);
                }
              }
              await new Promise((done) => setTimeout(done, round.pauseMs));
            }
            // Every hold is released by its own expiry event once its time has come, none before it.
            const settled = await eventually(
              async () => {
                const current = await Promise.all(holds.map((h) => compacting.getReservation(tenant, h.id)));
                return current.some((r) => r.status === "held") ? undefined : current;
              },
              20_000,
              "expiry events to release every hold",
            );
            for (const r of settled) {
              if (r.status === "expired") expect(r.updatedAt).toBeGreaterThanOrEqual(r.expiresAt);
            }
            for (const sku of skus) {
              const report = await compacting.reconcile(tenant, sku);
              expect(report.ok, JSON.stringify(report)).toBe(true);
              expect(report.counters.held, JSON.stringify(report)).toBe(0);
            }
          },
        ),
        // Shrinking against real services takes minutes; the counterexample is readable as it is.
        { numRuns: 6, endOnFailure: true },
      );
    } finally {
      await runtime.stop();
    }
  }, 240_000);

  it("reads a snapshot plus the tail once the ledger is long, keeping every raw entry", async () => {
    const tenant = fresh();
    const compacting = compactingLedger();
    for (let i = 0; i < 12; i++) await compacting.receive(tenant, "bulk", { quantity: 1 });
    const first = await compacting.reconcile(tenant, "bulk");
    expect(first.ok).toBe(true);
    expect(first.snapshotUpTo).toBeDefined();
    // All 12 entries were folded into the snapshot before the levels were computed.
    expect(first.entriesRead).toBe(0);
    expect(first.ledger.onHand).toBe(12);
    await compacting.receive(tenant, "bulk", { quantity: 1 });
    const second = await compacting.reconcile(tenant, "bulk");
    expect(second.entriesRead).toBe(1);
    expect(second.ledger.onHand).toBe(13);
    expect((await compacting.ledger(tenant, "bulk", 100)).entries).toHaveLength(13);
  });

  it("reports no drift when a change commits while it reads, with or without a snapshot", async () => {
    // Prepare: a ledger whose client lets another writer commit a change just before each of
    // reconcile's ledger reads, the instant at which reading the counter beside the ledger saw
    // the entry without its counter change (a drift that was not there).
    const tenant = fresh();
    const other = compactingLedger();
    const client: DynamoDBClient = createDynamoClient();
    const interfere = { armed: false, fired: 0 };
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === "QueryCommand" && interfere.armed) {
          interfere.armed = false;
          interfere.fired++;
          await other.receive(tenant, "racy", { quantity: 1 });
        }
        return next(args);
      },
      { step: "build", name: "commitDuringReconcile" },
    );
    const racing = new StockLedger(
      client,
      hg.config.tables.ledger,
      { schedule: async () => {}, cancel: async () => {} },
      { snapshotEvery: 5, settleMs: 0 },
    );
    // Act and assess: short (no snapshot yet), then long enough that a snapshot is written.
    for (const receipts of [2, 7]) {
      for (let i = 0; i < receipts; i++) await other.receive(tenant, "racy", { quantity: 1 });
      interfere.armed = true;
      const report = await racing.reconcile(tenant, "racy");
      expect(interfere.fired, "the change committed during the reconcile").toBeGreaterThan(0);
      expect(report.ok, JSON.stringify(report)).toBe(true);
      expect(report.ledger.onHand).toBe(report.counters.onHand);
    }
    // The change made during the read is counted by the next one.
    const after = await racing.reconcile(tenant, "racy");
    expect(after.ok).toBe(true);
    expect(after.counters.onHand).toBe(11);
    expect(after.ledger.onHand).toBe(11);
  });

  it("counts a receipt sent twice with the same id once", async () => {
    const tenant = fresh();
    await ledger.receive(tenant, "dup", { quantity: 7, id: "po-1" });
    await ledger.receive(tenant, "dup", { quantity: 7, id: "po-1" });
    expect((await ledger.stock(tenant, "dup")).onHand).toBe(7);
    await expect(ledger.receive(tenant, "dup", { quantity: 8, id: "po-1" })).rejects.toBeInstanceOf(
      LedgerValidationError,
    );
  });
});
