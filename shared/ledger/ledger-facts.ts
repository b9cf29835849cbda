import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  DynamoDBDocumentClient,
  GetCommand,
} from "@aws-sdk/lib-dynamodb";
import pMap from "p-map";
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

/** BatchGetItem reads at most 100 keys. */
const BATCH = 100;

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
      const chunks = Array.from({ length: Math.ceil(ids.length / BATCH) }, (_, i) =>
        ids.slice(i * BATCH, (i + 1) * BATCH),
      );
      const found = new Map<string, string>();
      await pMap(
        chunks,
        async (chunk) => {
          let keys: Record<string, unknown>[] | undefined = chunk.map((id) => ({
            pk: reservationKey(tenant, id),
            sk: "reservation",
          }));
          for (let round = 0; keys && keys.length > 0; round++) {
            if (round > 0) await new Promise((done) => setTimeout(done, Math.min(1_000, 20 * 2 ** round)));
            const reply: BatchGetCommandOutput = await doc.send(
              new BatchGetCommand({
                RequestItems: {
                  [table]: { Keys: keys, ConsistentRead: true, ProjectionExpression: "id, expiryEventId" },
                },
              }),
            );
            for (const item of reply.Responses?.[table] ?? [])
              found.set(String(item.id), String(item.expiryEventId));
            keys = reply.UnprocessedKeys?.[table]?.Keys;
          }
        },
        { concurrency: 4 },
      );
      return new Set(attempts.filter((a) => found.get(a.reservationId) === a.attempt).map((a) => a.attempt));
    },
  };
}
