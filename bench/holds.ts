import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { createDynamoClient } from "../shared/aws.ts";
import { InsufficientStockError } from "../shared/ledger/errors.ts";
import { benchHourglass } from "./hourglass.ts";

export interface HoldRun {
  /** Wall time from the first request to the last answer. */
  readonly ms: number;
  readonly won: number;
  readonly refused: number;
}

/**
 * `buyers` concurrent single-unit holds on one SKU with `stock` units, through the stock ledger
 * with its Redis admission (full local stack: DynamoDB Local ledger and journal for the expiry
 * events). A smaller warm-up round on another SKU goes first, as it does for the peer.
 */
export async function hotHolds(
  redisUrl: string,
  buyers: number,
  stock: number,
): Promise<HoldRun & { table: string }> {
  const { hourglass } = await benchHourglass("full", redisUrl);
  const ledger = hourglass.ledger!;
  const round = async (sku: string, n: number, units: number): Promise<HoldRun> => {
    await ledger.receive("bench", sku, { quantity: units });
    const started = performance.now();
    const results = await Promise.allSettled(
      Array.from({ length: n }, () =>
        ledger.hold("bench", { items: [{ sku, quantity: 1 }], holdSeconds: 600 }),
      ),
    );
    const ms = performance.now() - started;
    const failure = results.find(
      (r) => r.status === "rejected" && !(r.reason instanceof InsufficientStockError),
    );
    if (failure?.status === "rejected") throw failure.reason;
    const won = results.filter((r) => r.status === "fulfilled").length;
    return { ms, won, refused: n - won };
  };
  try {
    await round("warm-up", Math.ceil(buyers / 10), Math.ceil(stock / 10));
    return { ...(await round("hot", buyers, stock)), table: hourglass.config.tables.ledger };
  } finally {
    await hourglass.close();
  }
}

/**
 * The peer: `buyers` concurrent conditional UpdateItem calls (`stock >= 1`, then `stock - 1`) on
 * one item of the same DynamoDB Local, the least any DynamoDB-only hold can cost.
 */
export async function conditionalUpdates(table: string, buyers: number, stock: number): Promise<HoldRun> {
  const client: DynamoDBClient = createDynamoClient();
  const doc = DynamoDBDocumentClient.from(client);
  const round = async (pk: string, n: number, units: number): Promise<HoldRun> => {
    await doc.send(new PutCommand({ TableName: table, Item: { pk, sk: "peer", stock: units } }));
    const started = performance.now();
    const results = await Promise.allSettled(
      Array.from({ length: n }, () =>
        doc.send(
          new UpdateCommand({
            TableName: table,
            Key: { pk, sk: "peer" },
            UpdateExpression: "SET stock = stock - :one",
            ConditionExpression: "stock >= :one",
            ExpressionAttributeValues: { ":one": 1 },
          }),
        ),
      ),
    );
    const ms = performance.now() - started;
    const failure = results.find(
      (r) => r.status === "rejected" && (r.reason as Error).name !== "ConditionalCheckFailedException",
    );
    if (failure?.status === "rejected") throw failure.reason;
    const won = results.filter((r) => r.status === "fulfilled").length;
    return { ms, won, refused: n - won };
  };
  try {
    await round("peer#warm-up", Math.ceil(buyers / 10), Math.ceil(stock / 10));
    return await round("peer#hot", buyers, stock);
  } finally {
    client.destroy();
  }
}
