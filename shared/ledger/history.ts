import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { notExists } from "../dynamo/conditions.ts";
import { onlyIf } from "../dynamo/expression.ts";
import { onConditionFailed } from "../dynamo/failures.ts";
import { decodeCursor, encodeCursor } from "../journal/cursor.ts";
import { entryKey, ledgerKey, sequenceOf, snapshotKey } from "./keys.ts";
import { apply, type LedgerEntry, type StockLevels } from "./model.ts";

const ZERO: StockLevels = { onHand: 0, held: 0, sold: 0 };

interface Snapshot {
  readonly upTo: string;
  readonly levels: StockLevels;
}

/**
 * A SKU's append-only ledger and its snapshots: reading pages of entries, and recomputing the
 * levels from the latest snapshot plus the tail after it. Entries are never changed or deleted;
 * a snapshot is one more record, in its own partition, that summarises the entries up to one.
 */
export class LedgerHistory {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly clock: () => number,
    /** Entries younger than this are never folded into a snapshot (see LedgerOptions.settleMs). */
    private readonly settleMs: number,
    private readonly snapshotEvery: number,
  ) {}

  /**
   * A page of entries in the order they committed: the numbered ones by their sequence, after any
   * older entries from before the sequence (in their writers' time order, as they always were).
   */
  async page(tenant: string, sku: string, limit: number, cursor?: string) {
    const reply = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": ledgerKey(tenant, sku) },
        Limit: limit,
        ExclusiveStartKey: decodeCursor(cursor),
      }),
    );
    return { entries: (reply.Items ?? []) as LedgerEntry[], cursor: encodeCursor(reply.LastEvaluatedKey) };
  }

  /**
   * The levels the ledger says, from the latest snapshot plus the entries after it. When that
   * tail is long, its settled part is folded into a new snapshot first, so the next read is short.
   */
  async recompute(tenant: string, sku: string, upToSeq: number) {
    // Entries from before the sequence sort before every numbered one, so "up to number n"
    // includes them all, and n = 0 means exactly them.
    const upTo = entryKey(upToSeq);
    let snapshot = await this.latestSnapshot(tenant, sku, upTo);
    let tail = await this.entriesAfter(tenant, sku, snapshot?.upTo, upTo);
    if (tail.length >= this.snapshotEvery) {
      const written = await this.writeSnapshot(tenant, sku, snapshot, tail);
      if (written) {
        snapshot = written;
        tail = tail.filter((entry) => entry.sk > written.upTo);
      }
    }
    const levels = tail.reduce(
      (acc, entry) => apply(acc, entry.kind, entry.quantity),
      snapshot?.levels ?? ZERO,
    );
    return { levels, entriesRead: tail.length, snapshotUpTo: snapshot?.upTo };
  }

  /** The latest snapshot covering no entry after `upTo`. */
  private async latestSnapshot(tenant: string, sku: string, upTo: string): Promise<Snapshot | undefined> {
    const reply = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: "pk = :pk AND sk <= :upTo",
        ExpressionAttributeValues: { ":pk": snapshotKey(tenant, sku), ":upTo": upTo },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const item = reply.Items?.[0];
    return item
      ? { upTo: item.sk as string, levels: { onHand: item.onHand, held: item.held, sold: item.sold } }
      : undefined;
  }

  /** The entries after `after` (from the first, without it) up to `upTo`, inclusive. */
  private async entriesAfter(
    tenant: string,
    sku: string,
    after: string | undefined,
    upTo: string,
  ): Promise<LedgerEntry[]> {
    const entries: LedgerEntry[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const reply = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          ...entryRange(ledgerKey(tenant, sku), after, upTo),
          ExclusiveStartKey: start,
          ConsistentRead: true,
        }),
      );
      entries.push(...((reply.Items ?? []) as LedgerEntry[]));
      start = reply.LastEvaluatedKey;
    } while (start);
    return after === undefined ? entries : entries.filter((entry) => entry.sk > after);
  }

  /** Folds the settled start of `tail` into a snapshot; a concurrent identical one is fine. */
  private async writeSnapshot(
    tenant: string,
    sku: string,
    previous: Snapshot | undefined,
    tail: LedgerEntry[],
  ): Promise<Snapshot | undefined> {
    const settled = this.settledStart(tail, previous);
    if (settled.length === 0) return undefined;
    const levels = settled.reduce(
      (acc, entry) => apply(acc, entry.kind, entry.quantity),
      previous?.levels ?? ZERO,
    );
    const upTo = settled[settled.length - 1]!.sk;
    const put = this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: {
          pk: snapshotKey(tenant, sku),
          sk: upTo,
          kind: "SNAPSHOT",
          ...levels,
          entries: settled.length,
          at: this.clock(),
        },
        ...onlyIf(notExists("pk")),
      }),
    );
    await onConditionFailed(put, () => undefined);
    return { upTo, levels };
  }

  /**
   * The entries of `tail` that no write still in flight can come before, up to the first that one
   * might: a snapshot covers everything up to its last entry, for good. A numbered entry is final
   * once every number before it is there (a transaction takes the next numbers only after the
   * previous one committed, and a query may still miss a commit in flight, which the gap shows).
   * An entry from before the sequence has only its writer's clock, so it waits out `settleMs`.
   */
  private settledStart(tail: readonly LedgerEntry[], previous: Snapshot | undefined): LedgerEntry[] {
    const settledBefore = this.clock() - this.settleMs;
    // The number of the last entry the previous snapshot covers (0: none, or only older entries).
    let last = (previous && sequenceOf(previous.upTo)) ?? 0;
    const settled: LedgerEntry[] = [];
    for (const entry of tail) {
      if (entry.seq === undefined ? entry.at > settledBefore : entry.seq !== last + 1) break;
      if (entry.seq !== undefined) last = entry.seq;
      settled.push(entry);
    }
    return settled;
  }
}

/**
 * The key condition of a partition's entries after `after` up to `upTo` (inclusive). A key
 * condition takes one comparison of the sort key, so a range with both ends is `BETWEEN`, which
 * includes `after` itself: the caller drops it. `after <= upTo` always holds here, since the
 * snapshot that gives `after` was itself chosen at or before `upTo`.
 */
function entryRange(pk: string, after: string | undefined, upTo: string) {
  return after === undefined
    ? {
        KeyConditionExpression: "pk = :pk AND sk <= :upTo",
        ExpressionAttributeValues: { ":pk": pk, ":upTo": upTo },
      }
    : {
        KeyConditionExpression: "pk = :pk AND sk BETWEEN :after AND :upTo",
        ExpressionAttributeValues: { ":pk": pk, ":after": after, ":upTo": upTo },
      };
}
