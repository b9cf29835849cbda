import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { idFactory } from "../ids.ts";
import { type Logger, silentLogger } from "../logger.ts";
import type { HoldAdmission } from "./admission.ts";
import { LedgerWrites } from "./commit.ts";
import { LedgerHistory } from "./history.ts";
import { LedgerItems } from "./items.ts";
import type { ReconcileReport, Reservation, StockView } from "./model.ts";
import { type ExpiryScheduler, ReservationService } from "./reservations.ts";
import { StockService } from "./stock.ts";

export type { ExpiryScheduler } from "./reservations.ts";

export interface LedgerOptions {
  /** A snapshot is written once this many entries follow the last one. */
  readonly snapshotEvery: number;
  /**
   * Entries from before the sequence (keyed by their writer's ULID) younger than this are never
   * folded into a snapshot: each write committed within seconds of its ULID's time, so older ones
   * are final. Numbered entries need no wait: one is final once every number before it is there.
   * @default 60000
   */
  readonly settleMs?: number;
  readonly clock?: () => number;
  /**
   * Hold admission in Redis (hot SKUs): refuses what cannot be held before DynamoDB is touched.
   * Without it, every hold is a DynamoDB transaction.
   */
  readonly admission?: HoldAdmission;
  /** Where the ledger says what it could not do but need not fail for (an expiry not cancelled). */
  readonly logger?: Logger;
}

/**
 * The stock ledger's one entry point, for the HTTP routes and the expiry handler: stock
 * (`StockService`) and holds (`ReservationService`) share one table and its item builders
 * (`items.ts`); every write is a transaction through the DynamoDB toolkit's `transact`.
 */
export class StockLedger {
  private readonly stockService: StockService;
  private readonly reservations: ReservationService;

  constructor(
    client: DynamoDBClient,
    table: string,
    expiry: ExpiryScheduler,
    readonly options: LedgerOptions,
  ) {
    const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
    const clock = options.clock ?? Date.now;
    const newId = idFactory();
    const items = new LedgerItems(table, clock);
    const writes = new LedgerWrites(doc, table, items);
    const history = new LedgerHistory(doc, table, clock, options.settleMs ?? 60_000, options.snapshotEvery);
    this.stockService = new StockService(doc, table, writes, history, clock, options.admission);
    this.reservations = new ReservationService(
      doc,
      table,
      items,
      writes,
      expiry,
      newId,
      clock,
      options.admission,
      options.logger ?? silentLogger,
    );
  }

  /** Stock in (a ledger entry); with an id, recorded once. */
  receive(tenant: string, sku: string, input: unknown): Promise<StockView> {
    return this.stockService.receive(tenant, sku, input);
  }

  stock(tenant: string, sku: string): Promise<StockView> {
    return this.stockService.stock(tenant, sku);
  }

  /** A SKU's ledger entries, in the order they committed. */
  ledger(tenant: string, sku: string, limit: number, cursor?: string) {
    return this.stockService.ledger(tenant, sku, limit, cursor);
  }

  reconcile(tenant: string, sku: string): Promise<ReconcileReport> {
    return this.stockService.reconcile(tenant, sku);
  }

  /** Holds every item or none, until `holdSeconds` from now; an expiry event releases it then. */
  hold(tenant: string, input: unknown): Promise<{ reservation: Reservation; created: boolean }> {
    return this.reservations.hold(tenant, input);
  }

  confirm(tenant: string, id: string): Promise<Reservation> {
    return this.reservations.confirm(tenant, id);
  }

  release(tenant: string, id: string, reason: "cancelled" | "expired"): Promise<Reservation> {
    return this.reservations.release(tenant, id, reason);
  }

  expire(tenant: string, id: string, expiryEventId: string): Promise<"released" | "nothing to do"> {
    return this.reservations.expire(tenant, id, expiryEventId);
  }

  getReservation(tenant: string, id: string): Promise<Reservation> {
    return this.reservations.getReservation(tenant, id);
  }
}
