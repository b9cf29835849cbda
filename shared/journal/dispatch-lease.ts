import { ConditionalCheckFailedException, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";

/**
 * The short lease a dispatcher takes per group of shards, so overlapping dispatchers (a slow run
 * and the next minute's) do not claim the same shards at once. A plain conditional write; Lua
 * atomicity keeps an overlap safe even if two hold it, so this only saves wasted work.
 */
export class DispatchLeases {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    private readonly table: string,
    private readonly owner: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client);
  }

  /** True when this owner now holds the group's lease until `now + ttlMs`. */
  async acquire(group: number, ttlMs: number, now: number): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: `dispatcher#${group}` },
          UpdateExpression:
            "SET #owner = :owner, expiresAt = :expires, #token = if_not_exists(#token, :zero) + :one",
          ConditionExpression: "attribute_not_exists(pk) OR expiresAt <= :now OR #owner = :owner",
          ExpressionAttributeNames: { "#owner": "owner", "#token": "token" },
          ExpressionAttributeValues: {
            ":owner": this.owner,
            ":expires": now + ttlMs,
            ":now": now,
            ":zero": 0,
            ":one": 1,
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Gives the lease up early; a lease someone else took over is left alone. */
  async release(group: number): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: `dispatcher#${group}` },
          UpdateExpression: "SET expiresAt = :zero",
          ConditionExpression: "#owner = :owner",
          ExpressionAttributeNames: { "#owner": "owner" },
          ExpressionAttributeValues: { ":owner": this.owner, ":zero": 0 },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
