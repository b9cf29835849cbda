import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { and, atLeast as availableAtLeast, type Condition, equals, notExists } from "../dynamo/conditions.ts";
import { increment, onlyIf, update } from "../dynamo/expression.ts";
import type { TransactItems } from "../dynamo/transact.ts";
import { counterKey, entryKey, ledgerKey, reservationKey } from "./keys.ts";
import type { EntryKind, Reservation } from "./model.ts";
import { reservationFree } from "./unwritten-hold.ts";

/**
 * The ledger table's items, built from named parts. Stock and reservations both write counters,
 * entries and reservations, each in one transaction (`LedgerWrites.commit`, which numbers the
 * entries and retries conflicts).
 */

export type CounterChanges = Partial<Record<"onHand" | "held" | "sold" | "available", number>>;

/** A ledger entry before it has its number. */
export interface EntryDraft {
  readonly kind: EntryKind;
  readonly quantity: number;
  readonly reservationId?: string;
}

/** One SKU's part of a transaction: what its counter changes by, and the entries that say why, in order. */
export interface SkuWrite {
  readonly sku: string;
  readonly changes: CounterChanges;
  readonly entries: readonly EntryDraft[];
  /** Only if this much is available (a hold). */
  readonly atLeast?: number;
}

export class LedgerItems {
  constructor(
    private readonly table: string,
    private readonly clock: () => number,
  ) {}

  /**
   * A SKU's counter update and its entries, numbered `seq + 1`, `seq + 2`… where `seq` is the
   * counter's sequence as read before the attempt. The update adds the entries' count to `seq`
   * and holds only while `seq` is still what was read (absent: the SKU has no numbered entry yet),
   * so a concurrent writer that took those numbers first makes DynamoDB refuse this one. A refusal
   * carries the counter as it stood: its `seq` to build the next attempt with, its `available` to
   * name a shortage with.
   */
  skuItems(tenant: string, write: SkuWrite, seq: number): TransactItems {
    const { sku, changes, entries, atLeast } = write;
    // `entries` counts every entry, those from before the sequence too; `seq` numbers the sequenced ones.
    const fields = { onHand: 0, held: 0, sold: 0, available: 0, ...changes, entries: entries.length };
    const conditions: Condition[] = [seq === 0 ? notExists("seq") : equals("seq", seq)];
    if (atLeast !== undefined) conditions.push(availableAtLeast("available", atLeast));
    const at = this.clock();
    return [
      {
        Update: {
          TableName: this.table,
          Key: { pk: counterKey(tenant, sku), sk: "counter" },
          ...update({
            set: Object.fromEntries(
              Object.entries(fields).map(([field, delta]) => [field, increment(delta)]),
            ),
            add: { seq: entries.length },
            if: and(...conditions),
          }),
          ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const,
        },
      },
      ...entries.map((entry, i) => ({
        Put: {
          TableName: this.table,
          Item: {
            pk: ledgerKey(tenant, sku),
            sk: entryKey(seq + 1 + i),
            seq: seq + 1 + i,
            kind: entry.kind,
            quantity: entry.quantity,
            reservationId: entry.reservationId,
            at,
          },
          ...onlyIf(notExists("pk")),
        },
      })),
    ];
  }

  reservationPut(tenant: string, reservation: Reservation) {
    return {
      Put: {
        TableName: this.table,
        Item: { pk: reservationKey(tenant, reservation.id), sk: "reservation", ...reservation },
        // Refused over a hold, and over this attempt's void (its expiry ran first: unwritten-hold.ts).
        ...onlyIf(reservationFree(reservation.expiryEventId)),
      },
    };
  }
}

/** A reservation as stored, read strongly consistent; undefined when there is none. */
export async function readReservation(
  doc: DynamoDBDocumentClient,
  table: string,
  tenant: string,
  id: string,
): Promise<Reservation | undefined> {
  const { Item } = await doc.send(
    new GetCommand({
      TableName: table,
      Key: { pk: reservationKey(tenant, id), sk: "reservation" },
      ConsistentRead: true,
    }),
  );
  if (!Item) return undefined;
  const { pk: _pk, sk: _sk, ...reservation } = Item;
  return reservation as Reservation;
}

/** The same SKU twice in one hold is one line with the sum, sorted, so repeats compare equal. */
export function mergeItems(items: readonly { sku: string; quantity: number }[]) {
  const merged = new Map<string, number>();
  for (const { sku, quantity } of items) merged.set(sku, (merged.get(sku) ?? 0) + quantity);
  return [...merged].sort(([a], [b]) => (a < b ? -1 : 1)).map(([sku, quantity]) => ({ sku, quantity }));
}
