import { type DynamoDBClient, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { fieldIssues } from "../events/validate.ts";
import { idFactory } from "../ids.ts";
import type { Admission, HoldAdmission } from "./admission.ts";
import {
  InsufficientStockError,
  LedgerValidationError,
  ReservationConflictError,
  ReservationNotFoundError,
  ReservationStateError,
  type Shortage,
} from "./errors.ts";
import { GroupCommit } from "./group-commit.ts";
import { LedgerHistory } from "./history.ts";
import { counterKey, ledgerKey, receiptKey, reservationKey } from "./keys.ts";
import {
  type EntryKind,
  holdInput,
  MAX_HOLD_ITEMS,
  type ReconcileReport,
  type Reservation,
  type ReservationStatus,
  receiptInput,
  type StockView,
  view,
} from "./model.ts";

type TransactItems = NonNullable<TransactWriteCommandInput["TransactItems"]>;

/** Schedules and cancels the event that releases a hold when it expires (the engine's job). */
export interface ExpiryScheduler {
  schedule(tenant: string, eventId: string, reservationId: string, at: number): Promise<void>;
  cancel(tenant: string, eventId: string): Promise<void>;
}

export interface LedgerOptions {
  /** A snapshot is written once this many entries follow the last one. */
  readonly snapshotEvery: number;
  /**
   * Entries younger than this are never folded into a snapshot: each write is one transaction
   * that commits within seconds of its entry's ULID time, so older entries are final.
   * @default 60000
   */
  readonly settleMs?: number;
  readonly clock?: () => number;
  /**
   * Hold admission in Redis (hot SKUs): refuses what cannot be held before DynamoDB is touched.
   * Without it, every hold is a DynamoDB transaction.
   */
  readonly admission?: HoldAdmission;
}

const CONFLICT_RETRIES = 8;

/**
 * Stock and time-limited holds, as DynamoDB transactions. Each SKU has a counter item and an
 * append-only ledger; every change writes both in one transaction, so the counters can always be
 * recomputed from the ledger. `available >= quantity` is the hold's condition: no oversell.
 */
export class StockLedger {
  private readonly doc: DynamoDBDocumentClient;
  private readonly newId = idFactory();
  private readonly clock: () => number;
  private readonly history: LedgerHistory;
  /** A DynamoDB transaction carries 100 actions: the counter, then a reservation and an entry per hold. */
  private readonly groups = new GroupCommit(49, (group: { tenant: string; reservation: Reservation }[]) =>
    this.writeHoldGroup(group),
  );

  constructor(
    client: DynamoDBClient,
    private readonly table: string,
    private readonly expiry: ExpiryScheduler,
    readonly options: LedgerOptions,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
    this.clock = options.clock ?? Date.now;
    this.history = new LedgerHistory(
      this.doc,
      table,
      this.clock,
      options.settleMs ?? 60_000,
      options.snapshotEvery,
    );
  }

  /**
   * Stock in. With an id, the receipt is recorded once: a marker item written in the same
   * transaction makes a repeat a no-op (and the same id with another quantity an error).
   */
  async receive(tenant: string, sku: string, input: unknown): Promise<StockView> {
    const parsed = receiptInput.safeParse(input);
    if (!parsed.success) throw new LedgerValidationError(fieldIssues(parsed.error));
    const { quantity, id } = parsed.data;
    const marker = id && {
      Put: {
        TableName: this.table,
        Item: { pk: receiptKey(tenant, sku, id), sk: "receipt", quantity, at: this.clock() },
        ConditionExpression: "attribute_not_exists(pk)",
        ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const,
      },
    };
    try {
      await this.transact([
        ...(marker ? [marker] : []),
        this.counterUpdate(tenant, sku, { onHand: quantity, available: quantity }),
        this.entryPut(tenant, sku, "STOCK_IN", quantity),
      ]);
      await this.options.admission?.credit(tenant, sku, quantity);
    } catch (error) {
      const reason =
        error instanceof TransactionCanceledException ? error.CancellationReasons?.[0] : undefined;
      if (!marker || reason?.Code !== "ConditionalCheckFailed") throw error;
      const first = reason.Item ? unmarshall(reason.Item) : undefined;
      if (Number(first?.quantity) !== quantity) {
        throw new LedgerValidationError([
          { path: "id", message: "this receipt id was used for another quantity" },
        ]);
      }
    }
    return this.stock(tenant, sku);
  }

  async stock(tenant: string, sku: string): Promise<StockView> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: counterKey(tenant, sku), sk: "counter" },
        ConsistentRead: true,
      }),
    );
    return view(sku, { onHand: Item?.onHand ?? 0, held: Item?.held ?? 0, sold: Item?.sold ?? 0 });
  }

  /** Holds every item or none, until `holdSeconds` from now; an expiry event releases it then. */
  async hold(tenant: string, input: unknown): Promise<{ reservation: Reservation; created: boolean }> {
    const parsed = holdInput.safeParse(input);
    if (!parsed.success) throw new LedgerValidationError(fieldIssues(parsed.error));
    const request = parsed.data;
    const items = mergeItems(request.items);
    if (items.length > MAX_HOLD_ITEMS) {
      throw new LedgerValidationError([
        {
          path: "items",
          message: `at most ${MAX_HOLD_ITEMS} different SKUs fit in one hold (one DynamoDB transaction)`,
        },
      ]);
    }
    const id = request.id ?? this.newId();
    const existing = request.id ? await this.findReservation(tenant, id) : undefined;
    if (existing) return { reservation: this.sameHold(existing, items), created: false };

    const now = this.clock();
    const expiresAt = now + request.holdSeconds * 1000;
    // Its id is new each attempt: an attempt that fails leaves an event that finds no matching
    // hold and does nothing. It also names the attempt's admission.
    const expiryEventId = `hold-expire:${this.newId()}`;
    const admitted = await this.admit(tenant, id, expiryEventId, items);
    try {
      // The expiry is scheduled before the hold is written, so no hold can exist without it.
      await this.expiry.schedule(tenant, expiryEventId, id, expiresAt);
    } catch (error) {
      if (admitted) await this.options.admission?.settle(tenant, admitted, false);
      throw error;
    }
    const reservation: Reservation = {
      id,
      status: "held",
      items,
      expiresAt,
      createdAt: now,
      updatedAt: now,
      expiryEventId,
    };
    let outcome: { reservation: Reservation; created: boolean };
    try {
      outcome = await this.writeHold(tenant, reservation, items);
    } catch (error) {
      // Known not to have committed: the admission is given back. (An unknown outcome leaves it
      // to its deadline.) A shortage the ledger found after Redis admitted means Redis counted
      // too high: its count is rebuilt from the ledger.
      if (
        admitted &&
        (error instanceof InsufficientStockError || error instanceof ReservationConflictError)
      ) {
        await this.options.admission?.settle(tenant, admitted, false);
        if (error instanceof InsufficientStockError) {
          await Promise.all(error.shortages.map(({ sku }) => this.options.admission?.rebuild(tenant, sku)));
        }
      }
      throw error;
    }
    if (admitted) {
      const mine = outcome.created && outcome.reservation.expiryEventId === expiryEventId;
      await this.options.admission?.settle(tenant, admitted, mine);
    }
    return outcome;
  }

  /** Redis admission, when configured: a refusal is answered here, before DynamoDB is touched. */
  private async admit(
    tenant: string,
    id: string,
    attempt: string,
    items: { sku: string; quantity: number }[],
  ): Promise<Admission | undefined> {
    if (!this.options.admission) return undefined;
    const result = await this.options.admission.admit(tenant, id, attempt, items);
    if ("refused" in result) throw new InsufficientStockError(result.refused);
    return result.admitted;
  }

  /**
   * Writes the hold. Holds of one SKU that arrive together are written in one transaction (group
   * commit): on a hot SKU, concurrent transactions on its counter item would conflict and retry.
   */
  private writeHold(
    tenant: string,
    reservation: Reservation,
    items: { sku: string; quantity: number }[],
  ): Promise<{ reservation: Reservation; created: boolean }> {
    const only = items.length === 1 ? items[0] : undefined;
    if (!only) return this.writeHoldAlone(tenant, reservation, items);
    return this.groups.submit(`${tenant}\n${only.sku}`, { tenant, reservation });
  }

  /**
   * One SKU's holds in one transaction: the counter once, for their sum, and each hold's
   * reservation and entry. If it fails, each hold's own transaction says what happened to it (one
   * whose group did commit, behind a lost reply, finds its reservation there).
   */
  private async writeHoldGroup(
    group: { tenant: string; reservation: Reservation }[],
  ): Promise<PromiseSettledResult<{ reservation: Reservation; created: boolean }>[]> {
    const alone = () =>
      Promise.allSettled(
        group.map(({ tenant, reservation }) =>
          this.writeHoldAlone(tenant, reservation, [...reservation.items]),
        ),
      );
    const first = group[0];
    if (!first || group.length === 1) return alone();
    const { tenant } = first;
    const sku = first.reservation.items[0]!.sku;
    const total = group.reduce((sum, { reservation }) => sum + reservation.items[0]!.quantity, 0);
    try {
      await this.transact([
        this.counterUpdate(tenant, sku, { held: total, available: -total, entries: group.length }, total),
        ...group.flatMap(({ reservation }) => [
          this.reservationPut(tenant, reservation),
          this.entryPut(tenant, sku, "HOLD", reservation.items[0]!.quantity, reservation.id),
        ]),
      ]);
    } catch {
      return alone();
    }
    return group.map(({ reservation }) => ({ status: "fulfilled", value: { reservation, created: true } }));
  }

  /** The hold's own transaction, and what its failure means. */
  private async writeHoldAlone(
    tenant: string,
    reservation: Reservation,
    items: { sku: string; quantity: number }[],
  ): Promise<{ reservation: Reservation; created: boolean }> {
    const { id } = reservation;
    try {
      await this.transact([
        this.reservationPut(tenant, reservation),
        ...items.flatMap(({ sku, quantity }) => [
          this.counterUpdate(tenant, sku, { held: quantity, available: -quantity }, quantity),
          this.entryPut(tenant, sku, "HOLD", quantity, id),
        ]),
      ]);
      return { reservation, created: true };
    } catch (error) {
      return this.afterFailedHold(tenant, reservation, items, error);
    }
  }

  /**
   * A hold's transaction failed, or seemed to. The error alone cannot say whether it committed: a
   * timeout may arrive after DynamoDB committed, and a retried request whose first attempt
   * committed is cancelled by its own reservation. So the reservation is read: its expiry event is
   * cancelled only when it is known not to exist, since a committed hold without one never ends.
   */
  private async afterFailedHold(
    tenant: string,
    reservation: Reservation,
    items: { sku: string; quantity: number }[],
    error: unknown,
  ): Promise<{ reservation: Reservation; created: boolean }> {
    const { id, expiryEventId } = reservation;
    // If this read fails too, nothing is known: the original error stands and the expiry stays
    // (an expiry event finds no hold of its own and does nothing).
    const current = await this.findReservation(tenant, id).catch(() => {
      throw error;
    });
    if (current?.expiryEventId === expiryEventId) return { reservation: current, created: true };
    // No reservation under this id, or another request's: this request's expiry has nothing to release.
    await this.expiry.cancel(tenant, expiryEventId).catch(() => {});
    // Another request with the same id won the race: answer as for a repeat.
    if (current) return { reservation: this.sameHold(current, items), created: false };
    if (!(error instanceof TransactionCanceledException)) throw error;
    const reasons = error.CancellationReasons ?? [];
    const shortages: Shortage[] = [];
    items.forEach(({ sku, quantity }, i) => {
      const reason = reasons[1 + i * 2];
      if (reason?.Code !== "ConditionalCheckFailed") return;
      const counter = reason.Item ? unmarshall(reason.Item) : undefined;
      shortages.push({ sku, requested: quantity, available: Number(counter?.available ?? 0) });
    });
    if (shortages.length > 0) throw new InsufficientStockError(shortages);
    throw error;
  }

  /** Sells what is held. Only while the hold is held and has not expired. */
  async confirm(tenant: string, id: string): Promise<Reservation> {
    const reservation = await this.getReservation(tenant, id);
    const now = this.clock();
    await this.transition(tenant, reservation, "confirmed", "confirm", now, true, (sku, quantity) => [
      this.counterUpdate(tenant, sku, { held: -quantity, sold: quantity }),
      this.entryPut(tenant, sku, "CONFIRM", quantity, id),
    ]);
    await this.expiry.cancel(tenant, reservation.expiryEventId).catch(() => {});
    return { ...reservation, status: "confirmed", updatedAt: now };
  }

  /** Returns a held hold's stock, once: a cancel racing an expiry releases it only one time. */
  async release(tenant: string, id: string, reason: "cancelled" | "expired"): Promise<Reservation> {
    const reservation = await this.getReservation(tenant, id);
    const now = this.clock();
    await this.transition(
      tenant,
      reservation,
      reason,
      reason === "cancelled" ? "cancel" : "expire",
      now,
      false,
      (sku, quantity) => [
        this.counterUpdate(tenant, sku, { held: -quantity, available: quantity }),
        this.entryPut(tenant, sku, "RELEASE", quantity, id),
      ],
    );
    const admission = this.options.admission;
    if (admission) {
      await Promise.all(
        reservation.items.map(({ sku, quantity }) => admission.credit(tenant, sku, quantity)),
      );
    }
    if (reason === "cancelled") await this.expiry.cancel(tenant, reservation.expiryEventId).catch(() => {});
    return { ...reservation, status: reason, updatedAt: now };
  }

  /** Called by the `reservation.expire` event: releases the hold it was scheduled for, if still held. */
  async expire(tenant: string, id: string, expiryEventId: string): Promise<"released" | "nothing to do"> {
    const reservation = await this.findReservation(tenant, id);
    if (reservation?.status !== "held" || reservation.expiryEventId !== expiryEventId) return "nothing to do";
    try {
      await this.release(tenant, id, "expired");
      return "released";
    } catch (error) {
      if (error instanceof ReservationStateError) return "nothing to do";
      throw error;
    }
  }

  async getReservation(tenant: string, id: string): Promise<Reservation> {
    const reservation = await this.findReservation(tenant, id);
    if (!reservation) throw new ReservationNotFoundError(id);
    return reservation;
  }

  /** A SKU's ledger entries, oldest first. */
  ledger(tenant: string, sku: string, limit: number, cursor?: string) {
    return this.history.page(tenant, sku, limit, cursor);
  }

  /**
   * Recomputes on-hand, held and sold from the ledger (the latest snapshot plus the entries after
   * it) and reports any drift from the counters. Raw entries are never deleted.
   */
  async reconcile(tenant: string, sku: string): Promise<ReconcileReport> {
    const [recomputed, counters] = await Promise.all([
      this.history.recompute(tenant, sku),
      this.stock(tenant, sku),
    ]);
    const ledger = recomputed.levels;
    const drift = {
      onHand: counters.onHand - ledger.onHand,
      held: counters.held - ledger.held,
      sold: counters.sold - ledger.sold,
      available: 0,
    };
    drift.available = drift.onHand - drift.held - drift.sold;
    // The Redis admission count is a cache of the ledger: reconcile sets it from the ledger again.
    await this.options.admission?.rebuild(tenant, sku);
    return {
      sku,
      counters,
      ledger: view(sku, ledger),
      drift,
      ok: drift.onHand === 0 && drift.held === 0 && drift.sold === 0,
      entriesRead: recomputed.entriesRead,
      snapshotUpTo: recomputed.snapshotUpTo,
    };
  }

  private async transition(
    tenant: string,
    reservation: Reservation,
    to: ReservationStatus,
    operation: string,
    now: number,
    requireUnexpired: boolean,
    perItem: (sku: string, quantity: number) => TransactItems,
  ): Promise<void> {
    try {
      await this.transact([
        {
          Update: {
            TableName: this.table,
            Key: { pk: reservationKey(tenant, reservation.id), sk: "reservation" },
            UpdateExpression: "SET #status = :to, updatedAt = :now",
            ConditionExpression: requireUnexpired
              ? "#status = :held AND expiresAt > :now"
              : "#status = :held",
            ExpressionAttributeNames: { "#status": "status" },
            ExpressionAttributeValues: { ":to": to, ":held": "held", ":now": now },
          },
        },
        ...reservation.items.flatMap(({ sku, quantity }) => perItem(sku, quantity)),
      ]);
    } catch (error) {
      if (
        error instanceof TransactionCanceledException &&
        error.CancellationReasons?.[0]?.Code === "ConditionalCheckFailed"
      ) {
        const current = await this.getReservation(tenant, reservation.id);
        const status = current.status === "held" && current.expiresAt <= now ? "expired" : current.status;
        throw new ReservationStateError(reservation.id, status, operation);
      }
      throw error;
    }
  }

  /** One transaction, retried when DynamoDB cancels it for a conflict with a concurrent one. */
  private async transact(items: TransactItems): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: items,
          }),
        );
        return;
      } catch (error) {
        const conflict =
          (error instanceof TransactionCanceledException &&
            (error.CancellationReasons ?? []).some((r) => r.Code === "TransactionConflict") &&
            !(error.CancellationReasons ?? []).some((r) => r.Code === "ConditionalCheckFailed")) ||
          (error as Error).name === "TransactionInProgressException";
        if (!conflict || attempt >= CONFLICT_RETRIES) throw error;
        await new Promise((done) => setTimeout(done, Math.random() * 20 * 2 ** attempt));
      }
    }
  }

  /** Adds `changes` to a SKU's counter; with `atLeast`, only if that much is available. */
  private counterUpdate(
    tenant: string,
    sku: string,
    changes: Partial<Record<"onHand" | "held" | "sold" | "available" | "entries", number>>,
    atLeast?: number,
  ) {
    const fields = { onHand: 0, held: 0, sold: 0, available: 0, entries: 1, ...changes };
    const names: Record<string, string> = {};
    const values: Record<string, number> = { ":zero": 0 };
    const sets = Object.entries(fields).map(([field, delta]) => {
      names[`#${field}`] = field;
      values[`:${field}`] = delta;
      return `#${field} = if_not_exists(#${field}, :zero) + :${field}`;
    });
    if (atLeast !== undefined) values[":need"] = atLeast;
    return {
      Update: {
        TableName: this.table,
        Key: { pk: counterKey(tenant, sku), sk: "counter" },
        UpdateExpression: `SET ${sets.join(", ")}`,
        // On a shortage, the cancellation reason carries the counter, so the answer can say how much is left.
        ...(atLeast !== undefined && {
          ConditionExpression: "#available >= :need",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD" as const,
        }),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    };
  }

  private reservationPut(tenant: string, reservation: Reservation) {
    return {
      Put: {
        TableName: this.table,
        Item: { pk: reservationKey(tenant, reservation.id), sk: "reservation", ...reservation },
        ConditionExpression: "attribute_not_exists(pk)",
      },
    };
  }

  private entryPut(tenant: string, sku: string, kind: EntryKind, quantity: number, reservationId?: string) {
    return {
      Put: {
        TableName: this.table,
        Item: {
          pk: ledgerKey(tenant, sku),
          sk: this.newId(),
          kind,
          quantity,
          reservationId,
          at: this.clock(),
        },
        ConditionExpression: "attribute_not_exists(pk)",
      },
    };
  }

  private async findReservation(tenant: string, id: string): Promise<Reservation | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.table,
        Key: { pk: reservationKey(tenant, id), sk: "reservation" },
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    const { pk: _pk, sk: _sk, ...reservation } = Item;
    return reservation as Reservation;
  }

  private sameHold(existing: Reservation, items: { sku: string; quantity: number }[]): Reservation {
    if (JSON.stringify(mergeItems(existing.items)) !== JSON.stringify(items))
      throw new ReservationConflictError(existing.id);
    return existing;
  }
}

/** The same SKU twice in one hold is one line with the sum, sorted, so repeats compare equal. */
function mergeItems(items: readonly { sku: string; quantity: number }[]) {
  const merged = new Map<string, number>();
  for (const { sku, quantity } of items) merged.set(sku, (merged.get(sku) ?? 0) + quantity);
  return [...merged].sort(([a], [b]) => (a < b ? -1 : 1)).map(([sku, quantity]) => ({ sku, quantity }));
}
