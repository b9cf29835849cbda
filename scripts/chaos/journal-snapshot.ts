import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, paginateScan } from "@aws-sdk/lib-dynamodb";
import type { JournalEntry, JournalRecord } from "./history.ts";

/**
 * Every event the journal holds, read straight from DynamoDB (not through the API), for the rules
 * that compare what the API answers with what the journal records (checks/journal.ts). Schedule
 * occurrences and every tenant's events are in it, including those no client ever named.
 */
export async function journalSnapshot(dynamo: DynamoDBClient, table: string): Promise<JournalRecord> {
  const doc = DynamoDBDocumentClient.from(dynamo);
  const items: JournalEntry[] = [];
  try {
    const pages = paginateScan(
      { client: doc, pageSize: 1_000 },
      {
        TableName: table,
        ConsistentRead: true,
        ProjectionExpression: "tenant, id, #s, runAt, updatedAt",
        ExpressionAttributeNames: { "#s": "status" },
      },
    );
    for await (const page of pages) {
      for (const item of page.Items ?? []) {
        // Only event items: the table may hold other kinds of rows beside them.
        if (typeof item.id !== "string" || typeof item.status !== "string") continue;
        items.push({
          tenant: String(item.tenant),
          id: item.id,
          status: item.status,
          runAt: Number(item.runAt),
          updatedAt: Number(item.updatedAt),
        });
      }
    }
    return { kind: "journal", at: Date.now(), items };
  } catch (error) {
    return { kind: "journal", at: Date.now(), items, error: (error as Error).message };
  }
}
