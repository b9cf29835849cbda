import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { type Condition, equals, notExists } from "../dynamo/conditions.ts";
import { increment, update } from "../dynamo/expression.ts";
import { onConditionFailed } from "../dynamo/failures.ts";
import { LimitsVersionMismatchError } from "./errors.ts";
import { noLimits, type StoredLimits, type TypeLimits } from "./model.ts";

const PREFIX = "limits/";
/** One item lists every tenant/type that ever had limits set (`~` is in no tenant), so the dispatcher reads them without a Scan. */
const INDEX_KEY = "limits-index/~all";
/** Point reads in flight while listing. */
const READS_IN_FLIGHT = 16;

/**
 * Limits in DynamoDB, the durable record, in the leases table (small items, read once a tick):
 * one item per tenant and type, `pk = limits/<tenant>/<type>`. Tenants and types never contain
 * `/`. An index item names every tenant/type ever set, so `list` is point reads (GetItem and
 * UpdateItem are all the functions are granted on this table: no Scan). Every write adds one to `version` and may be conditional on it (ZooKeeper's versioned set):
 * only `ConditionalCheckFailedException` becomes a domain error, carrying the item as it stood.
 */
export class LimitsStore {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    private readonly table: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }

  async get(tenant: string, type: string): Promise<StoredLimits> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: keyOf(tenant, type) }, ConsistentRead: true }),
    );
    return Item ? limitsOf(Item) : noLimits(tenant, type);
  }

  /**
   * Replaces a type's limits. With `expectedVersion`, only when the stored version is that one
   * (0: never written); without it, whatever the version.
   */
  async put(
    tenant: string,
    type: string,
    limits: TypeLimits,
    now: number,
    expectedVersion?: number,
  ): Promise<StoredLimits> {
    const optional = ["ratePerSecond", "burst", "maxConcurrency"] as const;
    // Indexed first: a crash between the two writes leaves an index entry without limits (read as
    // none), never limits the dispatcher cannot find.
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: INDEX_KEY },
        ...update({ add: { groups: new Set([`${tenant}/${type}`]) } }),
      }),
    );
    const write = this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: keyOf(tenant, type) },
        ...update({
          set: {
            tenant,
            type,
            paused: limits.paused,
            updatedAt: now,
            // An unset limit is removed below; `update` leaves out undefined values.
            ratePerSecond: limits.ratePerSecond,
            burst: limits.burst,
            maxConcurrency: limits.maxConcurrency,
            version: increment(1),
          },
          remove: optional.filter((field) => limits[field] === undefined),
          if: atVersion(expectedVersion),
        }),
        ReturnValues: "ALL_NEW",
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    const { Attributes } = await onConditionFailed(write, (existing) => {
      const current = existing ? limitsOf(existing) : noLimits(tenant, type);
      throw new LimitsVersionMismatchError(type, expectedVersion ?? 0, current);
    });
    return limitsOf(Attributes ?? {});
  }

  /** Every tenant's limits that were ever set (for the dispatcher, once a tick). */
  async list(): Promise<StoredLimits[]> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: INDEX_KEY }, ConsistentRead: true }),
    );
    const groups = [...((Item?.groups as Set<string> | undefined) ?? [])];
    const all: StoredLimits[] = [];
    for (let i = 0; i < groups.length; i += READS_IN_FLIGHT) {
      const slice = groups.slice(i, i + READS_IN_FLIGHT).map((group) => {
        const slash = group.indexOf("/");
        return this.get(group.slice(0, slash), group.slice(slash + 1));
      });
      all.push(...(await Promise.all(slice)));
    }
    return all.filter((limits) => limits.version > 0);
  }
}

/** The condition of a versioned set: 0 means never written, undefined any version. */
function atVersion(expected: number | undefined): Condition | undefined {
  if (expected === undefined) return undefined;
  return expected === 0 ? notExists("pk") : equals("version", expected);
}

function keyOf(tenant: string, type: string): string {
  return `${PREFIX}${tenant}/${type}`;
}

function limitsOf(item: Record<string, unknown>): StoredLimits {
  const number = (value: unknown) => (typeof value === "number" ? value : undefined);
  return {
    tenant: String(item.tenant),
    type: String(item.type),
    paused: item.paused === true,
    ratePerSecond: number(item.ratePerSecond),
    burst: number(item.burst),
    maxConcurrency: number(item.maxConcurrency),
    version: number(item.version) ?? 0,
    updatedAt: number(item.updatedAt) ?? 0,
  };
}
