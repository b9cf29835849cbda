import { ConditionalCheckFailedException, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import DataLoader from "dataloader";
import pMap from "p-map";
import type { NewEvent } from "../model/event.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
import { JournalConditionError } from "./errors.ts";
import { type JournalItem, type JournalStatus, journalKey, PENDING_STATUSES, toJournalItem } from "./item.ts";
import { type Condition, isDead, isPending, olderThan, type Update, update } from "./updates.ts";

export interface Page<T> {
  readonly items: T[];
  readonly cursor: string | undefined;
}

export type CreateResult =
  | { readonly created: true }
  | { readonly created: false; readonly existing: JournalItem };

/**
 * Puts in flight per batch create. The SDK's default agent keeps 50 sockets, so this leaves room
 * for the process's other requests; DynamoDB Local serves about 440 conditional puts a second at
 * 64 in flight and less below (measured), AWS far more.
 */
const PARALLEL_PUTS = 32;
/** BatchWriteItem's limit, and requests of it in flight per batch create. */
const BATCH_WRITE_ITEMS = 25;
const PARALLEL_BATCH_WRITES = 8;
const PARALLEL_READS = 8;

/**
 * The events journal: the durable record of every event. Redis is only a time index that can be
 * rebuilt from here. Every state change is a conditional write, so replaying one is harmless.
 */
export class EventJournal {
  private readonly doc: DynamoDBDocumentClient;
  private readonly reader: DynamoDBDocumentClient;
  /** Payload reads made in the same tick go out as one BatchGetItem (up to 100 keys). */
  private readonly payloads = new DataLoader<string, JournalItem | undefined>(
    async (keys) => {
      const found = await this.getMany(keys);
      return keys.map((key) => found.get(key));
    },
    { cache: false, maxBatchSize: 100 },
  );

  /**
   * @param readClient a client with its own connections for the worker's payload reads, so a
   *   backlog of completion writes never delays a handler's start. @default `client`
   */
  constructor(
    client: DynamoDBClient,
    readonly table: string,
    private readonly retentionSeconds: number,
    readClient: DynamoDBClient = client,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
    this.reader = readClient === client ? this.doc : DynamoDBDocumentClient.from(readClient);
  }

  /** Writes one event unless its id exists; a repeat returns the existing item instead. */
  async create(event: NewEvent, shard: number): Promise<CreateResult> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: toJournalItem(event, shard),
          ConditionExpression: "attribute_not_exists(pk)",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return { created: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        return { created: false, existing: unmarshall(error.Item!) as JournalItem };
      }
      throw error;
    }
  }

  /**
   * Writes many events. An event whose id the client chose gets its own conditional put
   * (attribute_not_exists), so a repeat comes back as the existing item, exactly as `create`. An
   * event whose id Hourglass generated (a ULID no earlier event can carry) needs no check, so those
   * go out in BatchWriteItem requests of 25, which write the same 1 WRU per KB with far fewer
   * round trips (DynamoDB Local: about 900 items/s against 80–440 conditional puts a second).
   * Never a transaction: the events of a batch are independent (the API answers per item), and a
   * transactional write costs twice the write units. Never BatchWriteItem for a client's id: it
   * has no conditions, so a repeated id would overwrite the event it names, even a finished one.
   */
  async createMany(events: readonly { event: NewEvent; shard: number }[]): Promise<CreateResult[]> {
    const fresh = events.filter(({ event }) => event.generatedId === true);
    const [checked] = await Promise.all([
      pMap(
        events.filter(({ event }) => event.generatedId !== true),
        ({ event, shard }) => this.create(event, shard),
        { concurrency: PARALLEL_PUTS },
      ),
      this.writeFresh(fresh),
    ]);
    let next = 0;
    return events.map(({ event }) => (event.generatedId === true ? { created: true } : checked[next++]!));
  }

  /** BatchWriteItem, 25 puts a request, retrying what DynamoDB leaves unprocessed. */
  private async writeFresh(events: readonly { event: NewEvent; shard: number }[]): Promise<void> {
    const chunks: (typeof events)[] = [];
    for (let i = 0; i < events.length; i += BATCH_WRITE_ITEMS)
      chunks.push(events.slice(i, i + BATCH_WRITE_ITEMS));
    await pMap(
      chunks,
      async (chunk) => {
        let request: Record<string, { PutRequest: { Item: Record<string, unknown> } }[]> | undefined = {
          [this.table]: chunk.map(({ event, shard }) => ({
            PutRequest: { Item: toJournalItem(event, shard) as unknown as Record<string, unknown> },
          })),
        };
        for (let round = 0; request && Object.keys(request).length > 0; round++) {
          // Still throttled after about eight seconds: fail the call (a retried call gets new ids).
          if (round > 12) throw new Error(`BatchWriteItem left items unprocessed after ${round} rounds`);
          if (round > 0) await sleep(Math.min(1_000, 20 * 2 ** round));
          const reply = await this.doc.send(new BatchWriteCommand({ RequestItems: request }));
          request = reply.UnprocessedItems as typeof request;
        }
      },
      { concurrency: PARALLEL_BATCH_WRITES },
    );
  }

  async get(tenant: string, id: string): Promise<JournalItem | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: journalKey(tenant, id) }, ConsistentRead: true }),
    );
    return Item as JournalItem | undefined;
  }

  /** The item, read strongly consistent and batched with the other reads of the same tick. */
  async load(tenant: string, id: string): Promise<JournalItem | undefined> {
    return this.payloads.load(journalKey(tenant, id));
  }

  /** Reads many items by key, 100 per request, retrying what DynamoDB leaves unprocessed. */
  async getMany(keys: readonly string[]): Promise<Map<string, JournalItem>> {
    const found = new Map<string, JournalItem>();
    const unique = [...new Set(keys)];
    const chunks: string[][] = [];
    for (let i = 0; i < unique.length; i += 100) chunks.push(unique.slice(i, i + 100));
    // Several requests in flight: a dispatcher claiming thousands of events reads them in parallel.
    await pMap(
      chunks,
      async (chunk) => {
        let request:
          | Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: boolean }>
          | undefined = {
          [this.table]: { Keys: chunk.map((pk) => ({ pk })), ConsistentRead: true },
        };
        for (let round = 0; request && Object.keys(request).length > 0; round++) {
          if (round > 0) await sleep(Math.min(1_000, 20 * 2 ** round));
          const reply = await this.reader.send(new BatchGetCommand({ RequestItems: request }));
          for (const item of reply.Responses?.[this.table] ?? [])
            found.set(item.pk as string, item as JournalItem);
          request = reply.UnprocessedKeys as typeof request;
        }
      },
      { concurrency: PARALLEL_READS },
    );
    return found;
  }

  markSucceeded(tenant: string, id: string, attempts: number, now: number) {
    return this.apply(
      "markSucceeded",
      tenant,
      id,
      isPending,
      update({
        set: { status: "succeeded", attempts, updatedAt: now, finishedAt: now, ttl: this.expiry(now) },
        remove: ["pshard", "pdue"],
      }),
    );
  }

  markRetrying(tenant: string, id: string, attempts: number, lastError: string, runAt: number, now: number) {
    return this.apply(
      "markRetrying",
      tenant,
      id,
      isPending,
      update({
        set: { status: "retrying", attempts, lastError, runAt, pdue: runAt, updatedAt: now },
      }),
    );
  }

  markDead(tenant: string, id: string, attempts: number, lastError: string, now: number) {
    return this.apply(
      "markDead",
      tenant,
      id,
      isPending,
      update({
        set: {
          status: "dead",
          attempts,
          lastError,
          updatedAt: now,
          finishedAt: now,
          dtenant: tenant,
          dkey: `${String(now).padStart(15, "0")}#${id}`,
          ttl: this.expiry(now),
        },
        remove: ["pshard", "pdue"],
      }),
    );
  }

  markCancelled(tenant: string, id: string, now: number) {
    return this.apply(
      "markCancelled",
      tenant,
      id,
      isPending,
      update({
        set: { status: "cancelled", updatedAt: now, finishedAt: now, ttl: this.expiry(now) },
        remove: ["pshard", "pdue"],
      }),
    );
  }

  /**
   * Moves a pending event to `runAt`. With `version` (the index's, after its own reschedule), only
   * if the item's version is older, so of two concurrent reschedules the later one wins in both
   * stores; a condition failure on a still-pending item means a newer one already applied.
   * Without it (the index did not hold the event), the version goes up by one.
   */
  reschedule(tenant: string, id: string, runAt: number, now: number, version?: number) {
    const change = update({
      set: { runAt, pdue: runAt, updatedAt: now, ...(version !== undefined && { version }) },
    });
    if (version === undefined) {
      return this.apply("reschedule", tenant, id, isPending, {
        expression: `${change.expression} ADD #version :one`,
        names: { ...change.names, "#version": "version" },
        values: { ...change.values, ":one": 1 },
      });
    }
    return this.apply("reschedule", tenant, id, olderThan(version), change);
  }

  replay(tenant: string, id: string, runAt: number, shard: number, now: number) {
    return this.apply(
      "replay",
      tenant,
      id,
      isDead,
      update({
        set: { status: "scheduled", attempts: 0, runAt, pshard: String(shard), pdue: runAt, updatedAt: now },
        remove: ["dtenant", "dkey", "ttl", "finishedAt", "lastError"],
      }),
    );
  }

  /** A tenant's events, newest first. */
  async listByTenant(tenant: string, limit: number, cursor?: string): Promise<Page<JournalItem>> {
    return this.queryKeysThenGet(
      {
        IndexName: "byTenant",
        KeyConditionExpression: "tenant = :t",
        ExpressionAttributeValues: { ":t": tenant },
        ScanIndexForward: false,
      },
      limit,
      cursor,
    );
  }

  /** A tenant's dead letters, most recent death first. */
  async listDead(tenant: string, limit: number, cursor?: string): Promise<Page<JournalItem>> {
    return this.queryKeysThenGet(
      {
        IndexName: "dead",
        KeyConditionExpression: "dtenant = :t",
        ExpressionAttributeValues: { ":t": tenant },
        ScanIndexForward: false,
      },
      limit,
      cursor,
    );
  }

  /** Pending events of one index shard, due at or before `dueBefore` (all of them when undefined). */
  async pending(shard: number, dueBefore: number | undefined, limit: number, cursor?: string) {
    const reply = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: "pending",
        KeyConditionExpression: dueBefore === undefined ? "pshard = :s" : "pshard = :s AND pdue <= :d",
        ExpressionAttributeValues:
          dueBefore === undefined ? { ":s": String(shard) } : { ":s": String(shard), ":d": dueBefore },
        Limit: limit,
        ExclusiveStartKey: decodeCursor(cursor),
      }),
    );
    return this.pendingPage(reply);
  }

  /**
   * Pending events of one index shard due after `dueAfter` (from the start when undefined) and at
   * or before `dueUntil`, in due order: the near-horizon loader's read (see docs/horizon.md).
   */
  async pendingBetween(
    shard: number,
    dueAfter: number | undefined,
    dueUntil: number,
    limit: number,
    cursor?: string,
  ): Promise<Page<JournalItem>> {
    const bounded = dueAfter !== undefined;
    const reply = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: "pending",
        KeyConditionExpression: bounded
          ? "pshard = :s AND pdue BETWEEN :a AND :u"
          : "pshard = :s AND pdue <= :u",
        ExpressionAttributeValues: {
          ":s": String(shard),
          ":u": dueUntil,
          ...(bounded && { ":a": dueAfter + 1 }),
        },
        Limit: limit,
        ExclusiveStartKey: decodeCursor(cursor),
      }),
    );
    return this.pendingPage(reply);
  }

  /** A page of the pending index holds keys only; the items come from the table, still pending when read. */
  private async pendingPage(reply: {
    Items?: Record<string, unknown>[] | undefined;
    LastEvaluatedKey?: Record<string, unknown> | undefined;
  }): Promise<Page<JournalItem>> {
    const keys = (reply.Items ?? []).map((item) => item.pk as string);
    const found = await this.getMany(keys);
    const items = keys
      .map((pk) => found.get(pk))
      .filter((item): item is JournalItem => item !== undefined && PENDING_STATUSES.includes(item.status));
    return { items, cursor: encodeCursor(reply.LastEvaluatedKey) };
  }

  /** Keys and due times of one shard's pending events due from `dueFrom` to `dueUntil`, in due order. */
  async pendingKeys(shard: number, dueFrom: number, dueUntil: number, limit: number, cursor?: string) {
    const reply = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: "pending",
        KeyConditionExpression: "pshard = :s AND pdue BETWEEN :f AND :u",
        ExpressionAttributeValues: { ":s": String(shard), ":f": dueFrom, ":u": dueUntil },
        Limit: limit,
        ExclusiveStartKey: decodeCursor(cursor),
      }),
    );
    return {
      keys: (reply.Items ?? []).map((item) => ({ pk: item.pk as string, due: item.pdue as number })),
      cursor: encodeCursor(reply.LastEvaluatedKey),
    };
  }

  private async queryKeysThenGet(
    query: Omit<QueryCommandInput, "TableName">,
    limit: number,
    cursor?: string,
  ) {
    const reply = await this.doc.send(
      new QueryCommand({
        ...query,
        TableName: this.table,
        Limit: limit,
        ExclusiveStartKey: decodeCursor(cursor),
      }),
    );
    const keys = (reply.Items ?? []).map((item) => item.pk as string);
    const found = await this.getMany(keys);
    return {
      items: keys.map((pk) => found.get(pk)).filter((item): item is JournalItem => item !== undefined),
      cursor: encodeCursor(reply.LastEvaluatedKey),
    };
  }

  private async apply(
    operation: string,
    tenant: string,
    id: string,
    condition: Condition,
    change: Update,
  ): Promise<JournalItem> {
    const key = journalKey(tenant, id);
    try {
      const { Attributes } = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: key },
          UpdateExpression: change.expression,
          ConditionExpression: `attribute_exists(pk) AND ${condition.expression}`,
          ExpressionAttributeNames: { ...change.names, ...condition.names },
          ExpressionAttributeValues: { ...change.values, ...condition.values },
          ReturnValues: "ALL_NEW",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return Attributes as JournalItem;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw new JournalConditionError(
          operation,
          key,
          error.Item ? (unmarshall(error.Item) as JournalItem) : undefined,
        );
      }
      throw error;
    }
  }

  private expiry(now: number): number {
    return Math.floor(now / 1000) + this.retentionSeconds;
  }
}

export type { JournalStatus };

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
