import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { atLeast as availableAtLeast, notExists } from "../dynamo/conditions.ts";
import { increment, onlyIf, update } from "../dynamo/expression.ts";
import { counterKey, ledgerKey, reservationKey } from "./keys.ts";
import type { EntryKind, Reservation } from "./model.ts";
import { reservationFree } from "./unwritten-hold.ts";

/**
 * The ledger table's items, built from named parts. Stock and reservations both write counters,
 * entries and reservations, each in a transaction (`transact`, which retries conflicts).
 */

export type CounterChanges = Partial<Record<"onHand" | "held" | "sold" | "available" | "entries", number>>;

export class LedgerItems {
  constructor(
    private readonly table: string,
    private readonly newId: () => string,
    private readonly clock: () => number,
  ) {}

  /** Adds `changes` to a SKU's counter; with `atLeast`, only if that much is available. */
  counterUpdate(tenant: string, sku: string, changes: CounterChanges, atLeast?: number) {
    const fields = { onHand: 0, held: 0, sold: 0, available: 0, entries: 1, ...changes };
    return {
      Update: {
        TableName: this.table,
        Key: { pk: counterKey(tenant, sku), sk: "counter" },
        ...update({
          set: Object.fromEntries(Object.entries(fields).map(([field, delta]) => [field, increment(delta)])),
          if: atLeast !== undefined ? availableAtLeast("available", atLeast) : undefined,
        }),
        // On a shortage, the cancellation reason carries the counter, so the answer can say how much is left.
        ...(atLeast !== undefined && { ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const }),
      },
    };
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

  entryPut(tenant: string, sku: string, kind: EntryKind, quantity: number, reservationId?: string) {
    return {
      Put: {
        TableName: this.table,
        Item: {
          pk: ledgerKey(tenant, sku),
          sk: this.newId(),
          kind,
          quantity,
          reservationId,
          at: this.clock(),
        },
        ...onlyIf(notExists("pk")),
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
