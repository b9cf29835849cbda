import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
} from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import DataLoader from "dataloader";
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

/** DynamoDB's limits for one transaction: 100 items, 4 MB. We stay under the size with a margin. */
const TRANSACTION_ITEMS = 100;
const TRANSACTION_BYTES = 3_500_000;
const PARALLEL_TRANSACTIONS = 4;
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
   * Writes many events in transactions of up to 100, each put conditional on the id being new.
   * One round trip per transaction, not per event. When some ids exist, DynamoDB cancels the
   * transaction and names them (with their items); the rest are written again without them.
   */
  async createMany(events: readonly { event: NewEvent; shard: number }[]): Promise<CreateResult[]> {
    const results: CreateResult[] = new Array(events.length);
    const chunks = chunkBySize(events.map((e, index) => ({ ...e, index })));
    let next = 0;
    const runner = async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++]!;
        await this.writeChunk(chunk, results);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_TRANSACTIONS, chunks.length) }, runner));
    return results;
  }

  private async writeChunk(
    chunk: { event: NewEvent; shard: number; index: number }[],
    results: CreateResult[],
  ): Promise<void> {
    let pending = chunk;
    for (let round = 0; pending.length > 0; round++) {
      try {
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: pending.map(({ event, shard }) => ({
              Put: {
                TableName: this.table,
                Item: toJournalItem(event, shard),
                ConditionExpression: "attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure: "ALL_OLD",
              },
            })),
          }),
        );
        for (const { index } of pending) results[index] = { created: true };
        return;
      } catch (error) {
        if (!(error instanceof TransactionCanceledException) || round >= 10) throw error;
        const reasons = error.CancellationReasons ?? [];
        const retry: typeof pending = [];
        pending.forEach((entry, i) => {
          const reason = reasons[i];
          if (reason?.Code === "ConditionalCheckFailed" && reason.Item) {
            results[entry.index] = { created: false, existing: unmarshall(reason.Item) as JournalItem };
          } else {
            retry.push(entry);
          }
        });
        // A conflict with another transaction cancels everything; back off before trying again.
        if (retry.length === pending.length) await sleep(Math.random() * 50 * 2 ** round);
        pending = retry;
      }
    }
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
    let next = 0;
    const runner = async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++]!;
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
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_READS, chunks.length) }, runner));
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
    // The index holds keys only; the items come from the table, still pending when read.
    const keys = (reply.Items ?? []).map((item) => item.pk as string);
    const found = await this.getMany(keys);
    const items = keys
      .map((pk) => found.get(pk))
      .filter((item): item is JournalItem => item !== undefined && PENDING_STATUSES.includes(item.status));
    return { items, cursor: encodeCursor(reply.LastEvaluatedKey) };
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

function chunkBySize<T extends { event: NewEvent }>(entries: T[]): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = JSON.stringify(entry.event.payload).length + 512;
    if (current.length === TRANSACTION_ITEMS || (current.length > 0 && bytes + size > TRANSACTION_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
