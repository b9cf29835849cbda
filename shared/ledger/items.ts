import { TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import {
  type DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from "@aws-sdk/lib-dynamodb";
import { counterKey, ledgerKey, reservationKey } from "./keys.ts";
import type { EntryKind, Reservation } from "./model.ts";

/**
 * The ledger table's items, built from named parts, and the one transaction loop every ledger
 * write goes through. Stock and reservations both write counters, entries and reservations.
 */
export type TransactItems = NonNullable<TransactWriteCommandInput["TransactItems"]>;

const CONFLICT_RETRIES = 8;

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
    const names: Record<string, string> = {};
    const values: Record<string, number> = { ":zero": 0 };
    const sets = Object.entries(fields).map(([field, delta]) => {
      names[`#${field}`] = field;
      values[`:${field}`] = delta;
      return `#${field} = if_not_exists(#${field}, :zero) + :${field}`;
    });
    if (atLeast !== undefined) values[":need"] = atLeast;
    return {
      Update: {
        TableName: this.table,
        Key: { pk: counterKey(tenant, sku), sk: "counter" },
        UpdateExpression: `SET ${sets.join(", ")}`,
        // On a shortage, the cancellation reason carries the counter, so the answer can say how much is left.
        ...(atLeast !== undefined && {
          ConditionExpression: "#available >= :need",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const,
        }),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    };
  }

  reservationPut(tenant: string, reservation: Reservation) {
    return {
      Put: {
        TableName: this.table,
        Item: { pk: reservationKey(tenant, reservation.id), sk: "reservation", ...reservation },
        ConditionExpression: "attribute_not_exists(pk)",
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
        ConditionExpression: "attribute_not_exists(pk)",
      },
    };
  }
}

/**
 * One transaction, retried when DynamoDB cancels it for a conflict with a concurrent one. The items
 * are built again for every attempt, so a ledger entry's id (a ULID: its time orders the ledger) is
 * taken when the attempt is sent, not when a first attempt was: an entry whose transaction waited
 * out conflicts behind others must not sort before the entries that committed meanwhile.
 */
export async function transact(doc: DynamoDBDocumentClient, build: () => TransactItems): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: build() }));
      return;
    } catch (error) {
      const conflict =
        (error instanceof TransactionCanceledException &&
          (error.CancellationReasons ?? []).some((r) => r.Code === "TransactionConflict") &&
          !(error.CancellationReasons ?? []).some((r) => r.Code === "ConditionalCheckFailed")) ||
        (error as Error).name === "TransactionInProgressException";
      if (!conflict || attempt >= CONFLICT_RETRIES) throw error;
      await new Promise((done) => setTimeout(done, Math.random() * 20 * 2 ** attempt));
    }
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
