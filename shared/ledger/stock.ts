import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { notExists } from "../dynamo/conditions.ts";
import { onlyIf } from "../dynamo/expression.ts";
import { transactionRefusals } from "../dynamo/failures.ts";
import { fieldIssues } from "../events/validate.ts";
import type { HoldAdmission } from "./admission.ts";
import type { LedgerWrites } from "./commit.ts";
import { LedgerValidationError } from "./errors.ts";
import type { LedgerHistory } from "./history.ts";
import { counterKey, receiptKey } from "./keys.ts";
import { type ReconcileReport, receiptInput, type StockView, view } from "./model.ts";

/** Reads of the counter and the ledger reconcile makes, at most, to find them at one point. */
const RECONCILE_PASSES = 5;

/**
 * Stock in, stock levels, a SKU's ledger and its reconciliation. Each SKU has a counter item and
 * an append-only ledger; every change writes both in one transaction, so the counters can always
 * be recomputed from the ledger.
 */
export class StockService {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly writes: LedgerWrites,
    private readonly history: LedgerHistory,
    private readonly clock: () => number,
    private readonly admission: HoldAdmission | undefined,
  ) {}

  /**
   * Stock in. With an id, the receipt is recorded once: a marker item written in the same
   * transaction makes a repeat a no-op (and the same id with another quantity an error).
   */
  async receive(tenant: string, sku: string, input: unknown): Promise<StockView> {
    const parsed = receiptInput.safeParse(input);
    if (!parsed.success) throw new LedgerValidationError(fieldIssues(parsed.error));
    const { quantity, id } = parsed.data;
    const marker = id && {
      Put: {
        TableName: this.table,
        Item: { pk: receiptKey(tenant, sku, id), sk: "receipt", quantity, at: this.clock() },
        ...onlyIf(notExists("pk")),
        ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const,
      },
    };
    try {
      await this.writes.commit(tenant, marker ? [marker] : [], [
        {
          sku,
          changes: { onHand: quantity, available: quantity },
          entries: [{ kind: "STOCK_IN", quantity }],
        },
      ]);
      await this.admission?.credit(tenant, sku, quantity);
    } catch (error) {
      const refusal = transactionRefusals(error)?.[0];
      if (!marker || !refusal) throw error;
      if (Number(refusal.existing?.quantity) !== quantity) {
        throw new LedgerValidationError([
          { path: "id", message: "this receipt id was used for another quantity" },
        ]);
      }
    }
    return this.stock(tenant, sku);
  }

  async stock(tenant: string, sku: string): Promise<StockView> {
    return (await this.counter(tenant, sku)).view;
  }

  /** The SKU's counter, strongly consistent, with its sequence (0 before the first numbered entry). */
  private async counter(tenant: string, sku: string): Promise<{ view: StockView; seq: number }> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: counterKey(tenant, sku), sk: "counter" },
        ConsistentRead: true,
      }),
    );
    return {
      view: view(sku, { onHand: Item?.onHand ?? 0, held: Item?.held ?? 0, sold: Item?.sold ?? 0 }),
      seq: Number(Item?.seq ?? 0),
    };
  }

  /** A SKU's ledger entries, in the order they committed. */
  ledger(tenant: string, sku: string, limit: number, cursor?: string) {
    return this.history.page(tenant, sku, limit, cursor);
  }

  /**
   * Recomputes on-hand, held and sold from the ledger (the latest snapshot plus the entries after
   * it) and reports any drift from the counters. Raw entries are never deleted.
   */
  async reconcile(tenant: string, sku: string): Promise<ReconcileReport> {
    // The counter and the ledger are separate reads, so a change that commits between them would
    // show as drift. Every change moves the counter's `seq` in the transaction that appends its
    // entries: a ledger recomputed between two reads of the counter with the same `seq` is the
    // ledger as of that counter. A SKU busy enough to move on every pass is reported as read.
    let counter = await this.counter(tenant, sku);
    let recomputed = await this.history.recompute(tenant, sku);
    for (let pass = 1; pass < RECONCILE_PASSES; pass++) {
      const after = await this.counter(tenant, sku);
      if (after.seq === counter.seq) break;
      counter = after;
      recomputed = await this.history.recompute(tenant, sku);
    }
    const counters = counter.view;
    const ledger = recomputed.levels;
    const drift = {
      onHand: counters.onHand - ledger.onHand,
      held: counters.held - ledger.held,
      sold: counters.sold - ledger.sold,
      available: 0,
    };
    drift.available = drift.onHand - drift.held - drift.sold;
    // The Redis admission count is a cache of the ledger: reconcile sets it from the ledger again.
    await this.admission?.rebuild(tenant, sku);
    return {
      sku,
      counters,
      ledger: view(sku, ledger),
      drift,
      ok: drift.onHand === 0 && drift.held === 0 && drift.sold === 0,
      entriesRead: recomputed.entriesRead,
      snapshotUpTo: recomputed.snapshotUpTo,
    };
  }
}
