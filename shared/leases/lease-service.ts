import { ConditionalCheckFailedException, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { LeaseHeldError, LeaseValidationError, StaleLeaseError } from "./errors.ts";

/**
 * Clock skew allowed between the processes that decide expiry. Every decision uses the deciding
 * process's own clock (Lambda and EC2 clocks are kept by the Amazon Time Sync Service, well under
 * this). A lease is taken from its holder only once it has been expired for this long by the
 * taker's clock, so a holder whose clock runs up to this much behind never sees its lease stolen
 * before its own clock says it expired. Holders should renew well before expiry: `withLease`
 * renews at a third of the TTL.
 */
export const CLOCK_SKEW_MARGIN_MS = 1_000;

/** Longest ttl a lease may be taken or renewed for: a day, as the HTTP API allows. */
export const MAX_LEASE_TTL_MS = 86_400_000;

export interface LeaseGrant {
  readonly name: string;
  readonly owner: string;
  /** Strictly increasing per lease name, across expiry and takeover: a fencing token. */
  readonly token: number;
  readonly expiresAt: number;
}

export interface LeaseState {
  readonly name: string;
  readonly holder: string | undefined;
  readonly token: number;
  readonly expiresAt: number | undefined;
  readonly held: boolean;
}

interface LeaseItem {
  pk: string;
  owner?: string;
  token: number;
  expiresAt: number;
}

/**
 * Distributed locks with fencing tokens: one item per lease name, changed only by conditional
 * writes. The item is never deleted (its counter is the fencing sequence), so the table sets no
 * TTL on it. Only `ConditionalCheckFailedException` becomes a domain error; anything else is an
 * infrastructure failure and propagates.
 */
export class LeaseService {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    private readonly table: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }

  /** Takes the lease if nobody holds it or the holder's lease expired. Throws LeaseHeldError. */
  async acquire(tenant: string, name: string, owner: string, ttlMs: number): Promise<LeaseGrant> {
    checkTtl(ttlMs);
    const now = this.clock();
    try {
      const { Attributes } = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: keyOf(tenant, name) },
          UpdateExpression:
            "SET #owner = :owner, expiresAt = :expires, #token = if_not_exists(#token, :zero) + :one",
          ConditionExpression:
            "attribute_not_exists(pk) OR attribute_not_exists(#owner) OR expiresAt <= :expiredBefore",
          ExpressionAttributeNames: { "#owner": "owner", "#token": "token" },
          ExpressionAttributeValues: {
            ":owner": owner,
            ":expires": now + ttlMs,
            ":expiredBefore": now - CLOCK_SKEW_MARGIN_MS,
            ":zero": 0,
            ":one": 1,
          },
          ReturnValues: "ALL_NEW",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      const item = Attributes as LeaseItem;
      return { name, owner, token: item.token, expiresAt: item.expiresAt };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const item = unmarshall(error.Item ?? {}) as Partial<LeaseItem>;
        throw new LeaseHeldError(name, item.owner ?? "unknown", item.expiresAt ?? 0);
      }
      throw error;
    }
  }

  /** Extends the lease, for the same owner and token only, and only while it has not expired. */
  async renew(
    tenant: string,
    name: string,
    owner: string,
    token: number,
    ttlMs: number,
  ): Promise<LeaseGrant> {
    checkTtl(ttlMs);
    const now = this.clock();
    await this.conditional(name, owner, token, {
      Key: { pk: keyOf(tenant, name) },
      UpdateExpression: "SET expiresAt = :expires",
      ConditionExpression: "#owner = :owner AND #token = :token AND expiresAt > :now",
      ExpressionAttributeNames: { "#owner": "owner", "#token": "token" },
      ExpressionAttributeValues: { ":owner": owner, ":token": token, ":now": now, ":expires": now + ttlMs },
    });
    return { name, owner, token, expiresAt: now + ttlMs };
  }

  /** Gives the lease up, for the same owner and token only. The token counter stays. */
  async release(tenant: string, name: string, owner: string, token: number): Promise<void> {
    await this.conditional(name, owner, token, {
      Key: { pk: keyOf(tenant, name) },
      UpdateExpression: "REMOVE #owner SET expiresAt = :zero",
      ConditionExpression: "#owner = :owner AND #token = :token",
      ExpressionAttributeNames: { "#owner": "owner", "#token": "token" },
      ExpressionAttributeValues: { ":owner": owner, ":token": token, ":zero": 0 },
    });
  }

  async get(tenant: string, name: string): Promise<LeaseState> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: keyOf(tenant, name) }, ConsistentRead: true }),
    );
    const item = Item as LeaseItem | undefined;
    const held = Boolean(item?.owner) && (item?.expiresAt ?? 0) > this.clock();
    return {
      name,
      holder: held ? item?.owner : undefined,
      token: item?.token ?? 0,
      expiresAt: held ? item?.expiresAt : undefined,
      held,
    };
  }

  private async conditional(
    name: string,
    owner: string,
    token: number,
    input: Omit<ConstructorParameters<typeof UpdateCommand>[0], "TableName">,
  ): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          ...input,
          TableName: this.table,
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const item = error.Item ? (unmarshall(error.Item) as LeaseItem) : undefined;
        throw new StaleLeaseError(name, owner, token, item && { holder: item.owner, token: item.token });
      }
      throw error;
    }
  }
}

function keyOf(tenant: string, name: string): string {
  return `lease#${tenant}#${name}`;
}

/**
 * A ttl of 0, a negative or fractional one, NaN or Infinity would grant a lease that is already
 * expired, or write a number DynamoDB refuses (a 5xx for what is the caller's mistake).
 */
function checkTtl(ttlMs: number): void {
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_LEASE_TTL_MS) {
    throw new LeaseValidationError([
      { path: "ttlMs", message: `a whole number of milliseconds from 1 to ${MAX_LEASE_TTL_MS}` },
    ]);
  }
}
