import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { and, type Condition, equals, exists, lessThan, notExists, or } from "../dynamo/conditions.ts";
import { onlyIf, update } from "../dynamo/expression.ts";
import { onConditionFailed, transactionRefusals } from "../dynamo/failures.ts";
import { transact } from "../dynamo/transact.ts";
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

/** A page of a tenant's schedules, filtered by their event type and state. */
export interface ScheduleListOptions {
  readonly limit: number;
  readonly cursor?: string | undefined;
  readonly type?: string | undefined;
  readonly state?: ScheduleState | undefined;
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
      await transact(this.doc, () => [
        {
          Put: {
            TableName: this.table,
            Item: item,
            ...onlyIf(notExists("sk")),
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          },
        },
        {
          Update: {
            TableName: this.table,
            Key: { pk: item.tenant, sk: COUNTER },
            ...update({ add: { n: 1 }, if: or(notExists("n"), lessThan("n", maxPerTenant)) }),
          },
        },
      ]);
      return { created: true };
    } catch (error) {
      const [put, counter] = transactionRefusals<ScheduleItem>(error) ?? [];
      if (put?.existing) return { created: false, existing: put.existing };
      if (counter) {
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

  /**
   * Replaces a schedule if it is still the incarnation and revision `before` was read at; false when
   * someone changed it first (or deleted it and created it again).
   */
  async replace(item: ScheduleItem, before: ScheduleItem): Promise<boolean> {
    const put = this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: item,
        ...onlyIf(and(exists("sk"), sameIncarnation(before), equals("revision", before.revision))),
      }),
    );
    return onConditionFailed(
      put.then(() => true),
      () => false,
    );
  }

  /** Deletes a schedule and uncounts it; false when it was already gone. */
  async delete(tenant: string, id: string): Promise<boolean> {
    try {
      await transact(this.doc, () => [
        { Delete: { TableName: this.table, Key: { pk: tenant, sk: id }, ...onlyIf(exists("sk")) } },
        {
          Update: { TableName: this.table, Key: { pk: tenant, sk: COUNTER }, ...update({ add: { n: -1 } }) },
        },
      ]);
      return true;
    } catch (error) {
      if (transactionRefusals(error)?.[0]) return false;
      throw error;
    }
  }

  /** A tenant's schedules in id order, filtered by event type and state. */
  async list(
    tenant: string,
    options: ScheduleListOptions,
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
   * deleted (and perhaps created again) the schedule since it was read. False when the condition failed.
   */
  async advance(item: ScheduleItem, change: Advance): Promise<boolean> {
    const ended = change.nextAt === undefined;
    const write = this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: item.tenant, sk: item.id },
        ...update({
          set: {
            updatedAt: change.now,
            ...(ended ? { state: "ended" } : { nextAt: change.nextAt, dnext: change.nextAt }),
            windowStart: change.windowStart,
            ...(change.lastOccurrenceAt !== undefined && {
              lastOccurrenceAt: change.lastOccurrenceAt,
              lastOccurrenceId: change.lastOccurrenceId,
            }),
          },
          add: { occurrences: change.occurrences, skipped: change.skipped, missed: change.missed },
          remove: ended ? ["nextAt", "dshard", "dnext"] : [],
          if: and(
            sameIncarnation(item),
            equals("revision", item.revision),
            equals("nextAt", item.nextAt),
            equals("state", "active"),
          ),
        }),
      }),
    );
    return onConditionFailed(
      write.then(() => true),
      () => false,
    );
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

/**
 * The stored schedule is the incarnation `item` was read as: a schedule deleted and created again
 * starts at revision 1 again, so the revision alone cannot tell the two apart.
 */
function sameIncarnation(item: ScheduleItem): Condition {
  return item.incarnation === undefined ? notExists("incarnation") : equals("incarnation", item.incarnation);
}
