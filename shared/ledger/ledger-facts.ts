import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { batchGet } from "../dynamo/batch.ts";
import { counterKey, reservationKey } from "./keys.ts";

/** What the hold admission needs to know from the ledger (the truth) to rebuild its counts. */
export interface LedgerFacts {
  /** The counter's available stock, read consistently: what the hold transaction conditions on. */
  available(tenant: string, sku: string): Promise<number>;
  /** Of these hold attempts, the ones whose reservation the ledger holds (committed), by attempt. */
  committed(tenant: string, attempts: readonly HoldAttempt[]): Promise<Set<string>>;
}

export interface HoldAttempt {
  readonly reservationId: string;
  /** The attempt's expiry event id: only one attempt per reservation id ever commits. */
  readonly attempt: string;
}

export function ledgerFacts(client: DynamoDBClient, table: string): LedgerFacts {
  const doc = DynamoDBDocumentClient.from(client);
  return {
    async available(tenant, sku) {
      const { Item } = await doc.send(
        new GetCommand({
          TableName: table,
          Key: { pk: counterKey(tenant, sku), sk: "counter" },
          ConsistentRead: true,
          ProjectionExpression: "available",
        }),
      );
      return Number(Item?.available ?? 0);
    },
    async committed(tenant, attempts) {
      const ids = [...new Set(attempts.map((a) => a.reservationId))];
      const items = await batchGet<{ id: string; expiryEventId: string; neverHeld?: true }>(doc, {
        table,
        keys: ids.map((id) => ({ pk: reservationKey(tenant, id), sk: "reservation" })),
        consistent: true,
        attributes: ["id", "expiryEventId", "neverHeld"],
        concurrency: 4,
      });
      // A void (unwritten-hold.ts) names an attempt that never held anything.
      const held = items.filter((item) => item.neverHeld !== true);
      const found = new Map(held.map((item) => [String(item.id), String(item.expiryEventId)]));
      return new Set(attempts.filter((a) => found.get(a.reservationId) === a.attempt).map((a) => a.attempt));
    },
  };
}
