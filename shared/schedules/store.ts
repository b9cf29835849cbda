import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
} from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { shardOf } from "../engine/keys.ts";
import { decodeCursor, encodeCursor } from "../journal/cursor.ts";
import { ScheduleValidationError } from "./errors.ts";
import type { ScheduleItem, ScheduleState } from "./model.ts";

/** Partitions of the sparse `due` index: spreads the advance writes of many schedules. */
export const DUE_SHARDS = 16;
/** The per-tenant counter's sort key; `#` is not a schedule id character, so it never collides. */
const COUNTER = "#count";
/** The smallest character a schedule id can start with, so a listing skips the counter. */
const FIRST_ID = "-";

export type CreateOutcome =
  | { readonly created: true }
  | { readonly created: false; readonly existing: ScheduleItem };

/** What an advance writes: the next occurrence (undefined: the schedule ended) and its counters. */
export interface Advance {
  readonly nextAt: number | undefined;
  readonly windowStart: number | undefined;
  readonly lastOccurrenceAt: number | undefined;
  readonly lastOccurrenceId: string | undefined;
  readonly occurrences: number;
  readonly skipped: number;
  readonly missed: number;
  readonly now: number;
}

/**
 * The schedules table: partition `tenant`, sort key the schedule id, plus one counter item per
 * tenant kept exact by transactions. Every change is conditional; only
 * ConditionalCheckFailedException (or a transaction cancelled by a condition) becomes a domain answer.
 */
export class ScheduleStore {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    readonly table: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }

  static dueFields(tenant: string, id: string, state: ScheduleState, nextAt: number | undefined) {
    return state === "active" && nextAt !== undefined
      ? { dshard: String(shardOf(`${tenant}/${id}`, DUE_SHARDS)), dnext: nextAt }
      : {};
  }

  /** Writes a new schedule and counts it, unless the id exists (returned) or the tenant is full (422). */
  async create(item: ScheduleItem, maxPerTenant: number): Promise<CreateOutcome> {
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.table,
                Item: item,
                ConditionExpression: "attribute_not_exists(sk)",
                ReturnValuesOnConditionCheckFailure: "ALL_OLD",
              },
            },
            {
              Update: {
                TableName: this.table,
                Key: { pk: item.tenant, sk: COUNTER },
                UpdateExpression: "ADD n :one",
                ConditionExpression: "attribute_not_exists(n) OR n < :max",
                ExpressionAttributeValues: { ":one": 1, ":max": maxPerTenant },
              },
            },
          ],
        }),
      );
      return { created: true };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const [put, counter] = error.CancellationReasons ?? [];
      if (put?.Code === "ConditionalCheckFailed" && put.Item) {
        return { created: false, existing: unmarshall(put.Item) as ScheduleItem };
      }
      if (counter?.Code === "ConditionalCheckFailed") {
        throw new ScheduleValidationError([
          { path: "", message: `a tenant may have at most ${maxPerTenant} schedules; delete some first` },
        ]);
      }
      throw error;
    }
  }

  async get(tenant: string, id: string): Promise<ScheduleItem | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: tenant, sk: id }, ConsistentRead: true }),
    );
    return Item as ScheduleItem | undefined;
  }

  /** Replaces a schedule if its revision is still `revision`; false when someone changed it first. */
  async replace(item: ScheduleItem, revision: number): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: item,
          ConditionExpression: "attribute_exists(sk) AND revision = :r",
          ExpressionAttributeValues: { ":r": revision },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Deletes a schedule and uncounts it; false when it was already gone. */
  async delete(tenant: string, id: string): Promise<boolean> {
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.table,
                Key: { pk: tenant, sk: id },
                ConditionExpression: "attribute_exists(sk)",
              },
            },
            {
              Update: {
                TableName: this.table,
                Key: { pk: tenant, sk: COUNTER },
                UpdateExpression: "ADD n :minus",
                ExpressionAttributeValues: { ":minus": -1 },
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      if (error.CancellationReasons?.[0]?.Code === "ConditionalCheckFailed") return false;
      throw error;
    }
  }

  /** A tenant's schedules in id order, filtered by event type and state. */
  async list(
    tenant: string,
    options: {
      limit: number;
      cursor?: string | undefined;
      type?: string | undefined;
      state?: ScheduleState | undefined;
    },
  ): Promise<{ items: ScheduleItem[]; cursor: string | undefined }> {
    const filters: string[] = [];
    const values: Record<string, unknown> = { ":t": tenant, ":first": FIRST_ID };
    if (options.type !== undefined) {
      filters.push("#type = :type");
      values[":type"] = options.type;
    }
    if (options.state !== undefined) {
      filters.push("#state = :state");
      values[":state"] = options.state;
    }
    const reply = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: "pk = :t AND sk >= :first",
        ...(filters.length > 0 && {
          FilterExpression: filters.join(" AND "),
          ExpressionAttributeNames: {
            ...(options.type !== undefined && { "#type": "type" }),
            ...(options.state !== undefined && { "#state": "state" }),
          },
        }),
        ExpressionAttributeValues: values,
        Limit: options.limit,
        ExclusiveStartKey: decodeCursor(options.cursor),
      }),
    );
    return { items: (reply.Items ?? []) as ScheduleItem[], cursor: encodeCursor(reply.LastEvaluatedKey) };
  }

  /** Active schedules of one due shard whose next occurrence is at or before `before`, soonest first. */
  async due(shard: number, before: number, limit: number, cursor?: string) {
    const reply = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: "due",
        KeyConditionExpression: "dshard = :s AND dnext <= :d",
        ExpressionAttributeValues: { ":s": String(shard), ":d": before },
        Limit: limit,
        ExclusiveStartKey: decodeCursor(cursor),
      }),
    );
    return { items: (reply.Items ?? []) as ScheduleItem[], cursor: encodeCursor(reply.LastEvaluatedKey) };
  }

  /**
   * Moves `nextAt` forward after its occurrences exist, only if nobody moved it, edited, paused or
   * deleted the schedule since it was read. False when the condition failed.
   */
  async advance(item: ScheduleItem, change: Advance): Promise<boolean> {
    const ended = change.nextAt === undefined;
    const set = [
      "updatedAt = :now",
      ...(ended ? ["#state = :ended"] : ["nextAt = :next", "dnext = :next"]),
      ...(change.windowStart !== undefined ? ["windowStart = :ws"] : []),
      ...(change.lastOccurrenceAt !== undefined
        ? ["lastOccurrenceAt = :last", "lastOccurrenceId = :lastId"]
        : []),
    ];
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: item.tenant, sk: item.id },
          UpdateExpression: `SET ${set.join(", ")} ADD occurrences :o, skipped :s, missed :m${ended ? " REMOVE nextAt, dshard, dnext" : ""}`,
          ConditionExpression: "revision = :r AND nextAt = :old AND #state = :active",
          ExpressionAttributeNames: { "#state": "state" },
          ExpressionAttributeValues: {
            ":now": change.now,
            ":r": item.revision,
            ":old": item.nextAt,
            ":active": "active",
            ":o": change.occurrences,
            ":s": change.skipped,
            ":m": change.missed,
            ...(ended ? { ":ended": "ended" } : { ":next": change.nextAt }),
            ...(change.windowStart !== undefined && { ":ws": change.windowStart }),
            ...(change.lastOccurrenceAt !== undefined && {
              ":last": change.lastOccurrenceAt,
              ":lastId": change.lastOccurrenceId,
            }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Every schedule of a tenant, for stats: bounded by the per-tenant limit. */
  async all(tenant: string): Promise<ScheduleItem[]> {
    const items: ScheduleItem[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.list(tenant, { limit: 500, cursor });
      items.push(...page.items);
      cursor = page.cursor;
    } while (cursor);
    return items;
  }
}
