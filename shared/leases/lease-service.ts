import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { and, atMost, equals, greaterThan, notExists, or } from "../dynamo/conditions.ts";
import { increment, type UpdateSpec, update } from "../dynamo/expression.ts";
import { onConditionFailed } from "../dynamo/failures.ts";
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
  /** The owner already held it: the same token, given back with the new expiry. */
  readonly alreadyHeld?: true;
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

  /**
   * Takes the lease if nobody holds it or the holder's lease expired (a new token), or gives it
   * back to the owner that already holds it (the same token, expiry moved to now + ttl, as a renew
   * would: `alreadyHeld` says so). Throws LeaseHeldError while another owner holds it.
   */
  async acquire(tenant: string, name: string, owner: string, ttlMs: number): Promise<LeaseGrant> {
    checkTtl(ttlMs);
    // Each round is one conditional write decided on the item as DynamoDB holds it; a round loses
    // only to a write that changed the item in between (a release, a renew, a takeover), so the
    // next round sees that change. Bounded, since an owner racing itself is no reason to spin.
    for (let round = 0; ; round++) {
      const now = this.clock();
      const taken = await this.take(tenant, name, owner, ttlMs, now);
      if ("token" in taken) return taken;
      const existing = taken.existing;
      const live = existing?.owner === owner && existing.expiresAt > now;
      if (!live || round === 2) {
        throw new LeaseHeldError(name, existing?.owner ?? "unknown", existing?.expiresAt ?? 0);
      }
      const again = await this.reenter(tenant, name, owner, existing.token, now + ttlMs, now);
      if (again) return again;
    }
  }

  /**
   * A new grant, with the next token: nobody holds the lease, its holder is past expiry by the
   * skew margin, or it is this owner's own lease past expiry (nobody else can have held it since,
   * but the owner may have stopped using it, so the token moves on).
   */
  private async take(
    tenant: string,
    name: string,
    owner: string,
    ttlMs: number,
    now: number,
  ): Promise<LeaseGrant | { existing: LeaseItem | undefined }> {
    const write = this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: keyOf(tenant, name) },
        ...update({
          set: { owner, expiresAt: now + ttlMs, token: increment(1) },
          if: or(
            notExists("pk"),
            notExists("owner"),
            atMost("expiresAt", now - CLOCK_SKEW_MARGIN_MS),
            and(equals("owner", owner), atMost("expiresAt", now)),
          ),
        }),
        ReturnValues: "ALL_NEW",
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    const result = await onConditionFailed(write, (existing: LeaseItem | undefined) => ({ existing }));
    if ("existing" in result) return result;
    const item = result.Attributes as LeaseItem;
    return { name, owner, token: item.token, expiresAt: item.expiresAt };
  }

  /** The holder asks again: same token, while it still holds it with that token; undefined if not. */
  private async reenter(
    tenant: string,
    name: string,
    owner: string,
    token: number,
    expiresAt: number,
    now: number,
  ): Promise<LeaseGrant | undefined> {
    const write = this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: keyOf(tenant, name) },
        ...update({
          set: { expiresAt },
          if: and(equals("owner", owner), equals("token", token), greaterThan("expiresAt", now)),
        }),
      }),
    );
    const done = await onConditionFailed(write, () => undefined);
    return done && { name, owner, token, expiresAt, alreadyHeld: true };
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
    await this.conditional(tenant, name, owner, token, {
      set: { expiresAt: now + ttlMs },
      if: greaterThan("expiresAt", now),
    });
    return { name, owner, token, expiresAt: now + ttlMs };
  }

  /** Gives the lease up, for the same owner and token only. The token counter stays. */
  async release(tenant: string, name: string, owner: string, token: number): Promise<void> {
    await this.conditional(tenant, name, owner, token, { remove: ["owner"], set: { expiresAt: 0 } });
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

  /** A change by the holder: only while `owner` holds the lease with `token`, and the change's own condition holds. */
  private async conditional(
    tenant: string,
    name: string,
    owner: string,
    token: number,
    change: UpdateSpec,
  ): Promise<void> {
    const holder = and(equals("owner", owner), equals("token", token));
    const write = this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: keyOf(tenant, name) },
        ...update({ ...change, if: change.if ? and(holder, change.if) : holder }),
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    await onConditionFailed(write, (existing: LeaseItem | undefined) => {
      throw new StaleLeaseError(
        name,
        owner,
        token,
        existing && { holder: existing.owner, token: existing.token },
      );
    });
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
