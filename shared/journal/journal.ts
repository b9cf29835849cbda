import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
} from "@aws-sdk/lib-dynamodb";
import DataLoader from "dataloader";
import pMap from "p-map";
import { batchGet, batchPut } from "../dynamo/batch.ts";
import { type Condition, notExists } from "../dynamo/conditions.ts";
import { UnprocessedRequestError } from "../dynamo/errors.ts";
import { onlyIf, type UpdateSpec } from "../dynamo/expression.ts";
import { onConditionFailed } from "../dynamo/failures.ts";
import type { NewEvent } from "../model/event.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
import { type JournalItem, type JournalStatus, journalKey, PENDING_STATUSES, toJournalItem } from "./item.ts";
import { stampedUpdate } from "./stamps.ts";
import { isDead, isPending, olderThan } from "./updates.ts";

export interface Page<T> {
  readonly items: T[];
  readonly cursor: string | undefined;
}

export type CreateResult =
  | { readonly created: true }
  | { readonly created: false; readonly existing: JournalItem };

/** What `createMany` answers per event: also the write that failed, for that event alone. */
export type BatchCreateResult = CreateResult | { readonly created: false; readonly error: Error };

/**
 * Puts in flight per batch create. The SDK's default agent keeps 50 sockets, so this leaves room
 * for the process's other requests; DynamoDB Local serves about 440 conditional puts a second at
 * 64 in flight and less below (measured), AWS far more.
 */
const PARALLEL_PUTS = 32;
/**
 * BatchWriteItem requests (of 25 puts) in flight per batch create: all 20 of an API batch of 500,
 * so its journal write takes one round trip, not three (docs/benchmarks.md, durable enqueue).
 */
const PARALLEL_BATCH_WRITES = 20;
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
    const put = this.doc.send(
      new PutCommand({
        TableName: this.table,
        Item: toJournalItem(event, shard),
        ...onlyIf(notExists("pk")),
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    return onConditionFailed(
      put.then((): CreateResult => ({ created: true })),
      // Refused only when an item with this key exists, so there is one.
      (existing: JournalItem | undefined): CreateResult => ({ created: false, existing: existing! }),
    );
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
   *
   * A write that failed (DynamoDB still throttling it after the retries, or its request failing)
   * is that event's result, `{ created: false, error }`: the others are durable and answered as
   * such. Only when every write failed does the call throw, so a failed call stored nothing the
   * caller was not told about.
   */
  async createMany(events: readonly { event: NewEvent; shard: number }[]): Promise<BatchCreateResult[]> {
    const checked = events.filter(({ event }) => event.generatedId !== true);
    const fresh = events.filter(({ event }) => event.generatedId === true);
    const [conditional, unwritten] = await Promise.all([
      pMap(
        checked,
        ({ event, shard }) =>
          this.create(event, shard).catch(
            (error: unknown): BatchCreateResult => ({
              created: false,
              error: error as Error,
            }),
          ),
        { concurrency: PARALLEL_PUTS },
      ),
      this.writeFresh(fresh),
    ]);
    let nextChecked = 0;
    let nextFresh = 0;
    const results = events.map(({ event }): BatchCreateResult => {
      if (event.generatedId !== true) return conditional[nextChecked++]!;
      const error = unwritten.get(nextFresh++);
      return error ? { created: false, error } : { created: true };
    });
    const failures = results.filter((result) => "error" in result);
    if (failures.length > 0 && failures.length === results.length) throw failures[0]!.error;
    return results;
  }

  /**
   * BatchWriteItem, 25 puts a request, retrying what DynamoDB leaves unprocessed (with backoff, for
   * about eight seconds). The events it could not write, by position, with the reason.
   *
   * A request that failed may still have been applied (a lost reply, a timeout), and an event
   * answered failed but stored would run later (the loader, the recovery sweep, a rebuild) beside
   * the client's retry under a new id. So those events are read back, strongly consistent, and one
   * found is written. Items DynamoDB left unprocessed were not written, and are not read.
   */
  private async writeFresh(
    events: readonly { event: NewEvent; shard: number }[],
  ): Promise<Map<number, Error>> {
    if (events.length === 0) return new Map();
    const items = events.map(({ event, shard }) => toJournalItem(event, shard));
    const failed = await batchPut(this.doc, {
      table: this.table,
      items,
      key: ["pk"],
      concurrency: PARALLEL_BATCH_WRITES,
    });
    const unknown = failed.filter(({ error }) => !(error instanceof UnprocessedRequestError));
    const written = new Set<string>();
    if (unknown.length > 0) {
      // A read that fails too leaves them failed: not known to be written, as before.
      const found = await batchGet<Pick<JournalItem, "pk">>(this.doc, {
        table: this.table,
        keys: unknown.map(({ index }) => ({ pk: items[index]!.pk })),
        consistent: true,
        attributes: ["pk"],
        concurrency: PARALLEL_READS,
      }).catch(() => []);
      for (const { pk } of found) written.add(pk);
    }
    return new Map(
      failed.flatMap(({ index, error }) => (written.has(items[index]!.pk) ? [] : [[index, error] as const])),
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
    // Several requests in flight: a dispatcher claiming thousands of events reads them in parallel.
    const items = await batchGet<JournalItem>(this.reader, {
      table: this.table,
      keys: [...new Set(keys)].map((pk) => ({ pk })),
      consistent: true,
      concurrency: PARALLEL_READS,
    });
    return new Map(items.map((item) => [item.pk, item]));
  }

  markSucceeded(tenant: string, id: string, attempts: number, now: number) {
    return this.apply("markSucceeded", tenant, id, isPending, now, (at) => ({
      set: { status: "succeeded", attempts, updatedAt: at, finishedAt: at, ttl: this.expiry(at) },
      remove: ["pshard", "pdue"],
    }));
  }

  markRetrying(tenant: string, id: string, attempts: number, lastError: string, runAt: number, now: number) {
    return this.apply("markRetrying", tenant, id, isPending, now, (at) => ({
      set: { status: "retrying", attempts, lastError, runAt, pdue: runAt, updatedAt: at },
    }));
  }

  /**
   * Stamped strictly after every earlier write of the item: the index keeps the death at this
   * stamp (`finishedAt`), and a replay or a read from before it must compare as earlier.
   */
  markDead(tenant: string, id: string, attempts: number, lastError: string, now: number) {
    const death = (at: number) => ({
      set: {
        status: "dead",
        attempts,
        lastError,
        updatedAt: at,
        finishedAt: at,
        dtenant: tenant,
        dkey: `${String(at).padStart(15, "0")}#${id}`,
        ttl: this.expiry(at),
      },
      remove: ["pshard", "pdue"],
    });
    return this.apply("markDead", tenant, id, isPending, now, death, true);
  }

  markCancelled(tenant: string, id: string, now: number) {
    return this.apply("markCancelled", tenant, id, isPending, now, (at) => ({
      set: { status: "cancelled", updatedAt: at, finishedAt: at, ttl: this.expiry(at) },
      remove: ["pshard", "pdue"],
    }));
  }

  /**
   * Moves a pending event to `runAt`. With `version` (the index's, after its own reschedule), only
   * if the item's version is older, so of two concurrent reschedules the later one wins in both
   * stores; a condition failure on a still-pending item means a newer one already applied.
   * Without it (the index did not hold the event), the version goes up by one.
   */
  reschedule(tenant: string, id: string, runAt: number, now: number, version?: number) {
    const set = (at: number) => ({ runAt, pdue: runAt, updatedAt: at });
    if (version === undefined) {
      return this.apply("reschedule", tenant, id, isPending, now, (at) => ({
        set: set(at),
        add: { version: 1 },
      }));
    }
    return this.apply("reschedule", tenant, id, olderThan(version), now, (at) => ({
      set: { ...set(at), version },
    }));
  }

  /**
   * Schedules a dead letter again at `runAt`. Its stamp (`updatedAt`) is never before the death's,
   * whatever the clocks: the index revives a death stamped at or before it (revive.lua).
   */
  replay(tenant: string, id: string, runAt: number, shard: number, now: number) {
    return this.apply("replay", tenant, id, isDead, now, (at) => ({
      set: { status: "scheduled", attempts: 0, runAt, pshard: String(shard), pdue: runAt, updatedAt: at },
      remove: ["dtenant", "dkey", "ttl", "finishedAt", "lastError"],
    }));
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

  /** A conditional update of one item, stamped in the item's own order (stamps.ts). */
  private apply(
    operation: string,
    tenant: string,
    id: string,
    condition: Condition,
    now: number,
    change: (at: number) => Omit<UpdateSpec, "if">,
    strict = false,
  ): Promise<JournalItem> {
    const write = { table: this.table, operation, key: journalKey(tenant, id), condition, now, strict };
    return stampedUpdate(this.doc, write, change);
  }

  private expiry(now: number): number {
    return Math.floor(now / 1000) + this.retentionSeconds;
  }
}

export type { JournalStatus };
