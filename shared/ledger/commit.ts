import type { TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { batchGet } from "../dynamo/batch.ts";
import { transactionRefusals } from "../dynamo/failures.ts";
import { type TransactItems, transact } from "../dynamo/transact.ts";
import type { LedgerItems, SkuWrite } from "./items.ts";
import { counterKey } from "./keys.ts";

/** How many SKUs' sequences a process remembers from its own commits. */
const REMEMBERED_SKUS = 10_000;

/**
 * Ledger transactions whose entries are numbered in commit order, per SKU. Each SKU's counter
 * carries `seq`, the number of its last entry. A transaction reads it, writes its entries of that
 * SKU as `seq + 1`, `seq + 2`…, adds their count to it, and commits only if `seq` is still what it
 * read. Two transactions can never take the same numbers, and one that commits later takes higher
 * ones: in key order, a SKU's entries are in the order their writes committed, whatever the clocks
 * of the processes that wrote them say (reliability.md, finding 7).
 *
 * TransactWriteItems cannot return a value to use inside itself, hence the read first: one
 * strongly consistent read of each SKU's counter per transaction, no extra write (`seq` lives on
 * the counter the transaction updates anyway). A refusal because another writer moved `seq` in
 * between carries the counter as it stands (ALL_OLD): the transaction is built again with that
 * number and sent again, without a second read, within retries of its own (a burst of writers on
 * one SKU each lose a round to every one that commits before them); a conflict, which carries no
 * counter, reads the sequences again before its retry.
 */
export class LedgerWrites {
  /** `seq` after this process's last commit, by tenant and SKU (see `lastCommitted`). */
  private readonly committed = new Map<string, number>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly items: LedgerItems,
  ) {}

  /**
   * One transaction: `head` (a reservation, a receipt's marker) first, then each SKU's counter and
   * its entries, in the order of `writes` (one write per SKU). A refusal other than a moved
   * sequence (a shortage, a reservation in another state, a receipt already counted) is thrown as
   * DynamoDB gave it, for the caller to read with `transactionRefusals`.
   */
  async commit(tenant: string, head: TransactItems, writes: readonly SkuWrite[]): Promise<void> {
    const skus = writes.map((write) => write.sku);
    const seqs = this.lastCommitted(tenant, skus) ?? (await this.sequences(tenant, skus));
    await transact(
      this.doc,
      () => [...head, ...writes.flatMap((write) => this.items.skuItems(tenant, write, seqs.get(write.sku)!))],
      {
        retryRefused: (error) => moved(error, head.length, writes, seqs),
        // A conflict carries no counter: read the sequences again, or the retry is refused as stale.
        refresh: async () => {
          for (const [sku, seq] of await this.sequences(tenant, skus)) seqs.set(sku, seq);
        },
      },
    ).catch((error: unknown) => {
      // What this process knew may be what refused it: read the counters next time.
      for (const sku of skus) this.committed.delete(`${tenant}\n${sku}`);
      throw error;
    });
    for (const write of writes) this.remember(tenant, write.sku, seqs.get(write.sku)! + write.entries.length);
  }

  /**
   * Each SKU's `seq` as this process's last commit left it, when it knows every one of them. A
   * group of holds or releases on a hot SKU follows the one before it from the same process, which
   * left the number it needs: the read before the transaction is then skipped. If another writer
   * moved it since, the transaction is refused with the counter as it stands and sent again with
   * that number, as after any read that went stale (a round trip either way, but only then).
   */
  private lastCommitted(tenant: string, skus: readonly string[]): Map<string, number> | undefined {
    const seqs = new Map<string, number>();
    for (const sku of skus) {
      const seq = this.committed.get(`${tenant}\n${sku}`);
      if (seq === undefined) return undefined;
      seqs.set(sku, seq);
    }
    return seqs;
  }

  private remember(tenant: string, sku: string, seq: number): void {
    const key = `${tenant}\n${sku}`;
    this.committed.delete(key);
    this.committed.set(key, seq);
    // The SKUs written most recently are the ones worth knowing: the oldest goes first.
    if (this.committed.size > REMEMBERED_SKUS) this.committed.delete(this.committed.keys().next().value!);
  }

  /** Each SKU's `seq` as it stands (0 for a SKU without a numbered entry, or without a counter). */
  private async sequences(tenant: string, skus: readonly string[]): Promise<Map<string, number>> {
    const seqs = new Map(skus.map((sku) => [sku, 0]));
    const found = await batchGet<{ pk: string; seq?: number }>(this.doc, {
      table: this.table,
      keys: skus.map((sku) => ({ pk: counterKey(tenant, sku), sk: "counter" })),
      consistent: true,
      attributes: ["pk", "seq"],
      concurrency: 1,
    });
    const byKey = new Map(found.map((item) => [item.pk, Number(item.seq ?? 0)]));
    for (const sku of skus) seqs.set(sku, byKey.get(counterKey(tenant, sku)) ?? 0);
    return seqs;
  }
}

/**
 * Whether every refusal of `error` is a SKU's part whose `seq` another writer moved (its counter,
 * and the entries whose numbers that writer took), with no shortage: then `seqs` learns each
 * one's current number and the transaction is worth sending again. Any other refusal is the
 * caller's answer, whatever else moved.
 */
function moved(
  error: TransactionCanceledException,
  headLength: number,
  writes: readonly SkuWrite[],
  seqs: Map<string, number>,
): boolean {
  // Each action's SKU write, and whether it is that write's counter (the rest are its entries).
  const parts = new Map<number, { write: SkuWrite; counter: boolean }>();
  let at = headLength;
  for (const write of writes) {
    for (let i = 0; i <= write.entries.length; i++) parts.set(at + i, { write, counter: i === 0 });
    at += 1 + write.entries.length;
  }
  const refusals = transactionRefusals(error) ?? [];
  const learnt = new Map<string, number>();
  for (const [i, refusal] of refusals.entries()) {
    const part = parts.get(i);
    if (!refusal || !part?.counter) continue;
    const { write } = part;
    const seq = Number(refusal.existing?.seq ?? 0);
    const available = Number(refusal.existing?.available ?? 0);
    if (seq === seqs.get(write.sku)) return false;
    if (write.atLeast !== undefined && available < write.atLeast) return false;
    learnt.set(write.sku, seq);
  }
  // A refused head action, or an entry whose counter was not refused with it: not a moved sequence.
  const explained = refusals.every((refusal, i) => {
    const part = parts.get(i);
    return !refusal || (part !== undefined && learnt.has(part.write.sku));
  });
  if (!explained || learnt.size === 0) return false;
  for (const [sku, seq] of learnt) seqs.set(sku, seq);
  return true;
}
