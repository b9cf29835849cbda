import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { type Condition, contains, equals, notExists, or, sizeBelow } from "../dynamo/conditions.ts";
import { increment, update } from "../dynamo/expression.ts";
import { onConditionFailed } from "../dynamo/failures.ts";
import { LimitsVersionMismatchError, TooManyLimitedTypesError } from "./errors.ts";
import { noLimits, type StoredLimits, type TypeLimits } from "./model.ts";

const PREFIX = "limits/";
/**
 * Where the dispatcher finds every tenant/type with limits, without a Scan. Each tenant's types
 * are in an item of their own (`limits-index/<tenant>`), capped at `maxTypesPerTenant` by the
 * write's condition, and one item names the tenants (`~` is in no tenant). A single item of every
 * tenant/type, as there was before, filled its 400 KB with one tenant's PUTs, and then every
 * tenant's first limits on a type answered 503; it is still read, for what was written to it.
 */
const LEGACY_INDEX_KEY = "limits-index/~all";
const TENANTS_KEY = "limits-index/~tenants";
const tenantIndexKey = (tenant: string) => `limits-index/${tenant}`;
/** Point reads in flight while listing. */
const READS_IN_FLIGHT = 16;

/**
 * Limits in DynamoDB, the durable record, in the leases table (small items, read once a tick):
 * one item per tenant and type, `pk = limits/<tenant>/<type>`. Tenants and types never contain
 * `/`. Index items name every tenant/type ever set, so `list` is point reads (GetItem and
 * UpdateItem are all the functions are granted on this table: no Scan). Every write adds one to `version` and may be conditional on it (ZooKeeper's versioned set):
 * only `ConditionalCheckFailedException` becomes a domain error, carrying the item as it stood.
 */
export class LimitsStore {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    private readonly table: string,
    private readonly maxTypesPerTenant = 1_000,
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
    // Indexed first: a crash between the writes leaves an index entry without limits (read as
    // none), never limits the dispatcher cannot find.
    await this.index(tenant, type);
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
    const [legacy, tenants] = await Promise.all([
      this.set(LEGACY_INDEX_KEY, "groups"),
      this.set(TENANTS_KEY, "tenants"),
    ]);
    const groups = new Set<string>(legacy);
    const perTenant = await inSlices([...tenants], async (tenant) =>
      [...(await this.set(tenantIndexKey(tenant), "types"))].map((type) => `${tenant}/${type}`),
    );
    for (const group of perTenant.flat()) groups.add(group);
    const all = await inSlices([...groups], (group) => {
      const slash = group.indexOf("/");
      return this.get(group.slice(0, slash), group.slice(slash + 1));
    });
    return all.filter((limits) => limits.version > 0);
  }

  /**
   * Names the tenant/type in the index: the tenant in the tenants' item, the type in the
   * tenant's own item, unless the tenant already has `maxTypesPerTenant` other types there
   * (TooManyLimitedTypesError; nothing is written).
   */
  private async index(tenant: string, type: string): Promise<void> {
    const write = this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: tenantIndexKey(tenant) },
        ...update({
          add: { types: new Set([type]) },
          if: or(notExists("types"), contains("types", type), sizeBelow("types", this.maxTypesPerTenant)),
        }),
      }),
    );
    await onConditionFailed(write, () => {
      throw new TooManyLimitedTypesError(type, this.maxTypesPerTenant);
    });
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: TENANTS_KEY },
        ...update({ add: { tenants: new Set([tenant]) } }),
      }),
    );
  }

  /** The string set an index item holds; empty when there is none. */
  private async set(pk: string, attribute: "groups" | "tenants" | "types"): Promise<Set<string>> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk }, ConsistentRead: true }),
    );
    return (Item?.[attribute] as Set<string> | undefined) ?? new Set();
  }
}

/** `fn` over `items`, READS_IN_FLIGHT at a time, results in order. */
async function inSlices<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += READS_IN_FLIGHT) {
    out.push(...(await Promise.all(items.slice(i, i + READS_IN_FLIGHT).map(fn))));
  }
  return out;
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
