import { z } from "@hono/zod-openapi";

export const SKU = /^[A-Za-z0-9._:-]{1,128}$/;
/** Leaves room for the expiry event's id (`hold-expire:<ulid>` is separate, but the id is echoed in keys). */
export const RESERVATION_ID = /^[A-Za-z0-9._:-]{1,100}$/;

/**
 * DynamoDB transactions carry at most 100 actions; a hold spends one on the reservation and two per
 * SKU (the counter and its ledger entry).
 */
export const MAX_HOLD_ITEMS = 49;

export const receiptInput = z
  .object({
    quantity: z.number().int().min(1).max(1_000_000_000),
    id: z.string().regex(SKU, "1 to 128 characters from A-Z a-z 0-9 . _ : -").optional().openapi({
      description: "An idempotency key: a receipt sent again with the same id is counted once.",
    }),
  })
  .strict();

export const holdInput = z
  .object({
    id: z.string().regex(RESERVATION_ID, "1 to 100 characters from A-Z a-z 0-9 . _ : -").optional(),
    items: z
      .array(
        z
          .object({
            sku: z.string().regex(SKU, "1 to 128 characters from A-Z a-z 0-9 . _ : -"),
            quantity: z.number().int().min(1).max(1_000_000_000),
          })
          .strict(),
      )
      .min(1),
    holdSeconds: z
      .number()
      .int()
      .min(1)
      .max(31 * 86_400),
  })
  .strict();

export type ReceiptInput = z.input<typeof receiptInput>;
export type HoldInput = z.input<typeof holdInput>;

export type EntryKind = "STOCK_IN" | "HOLD" | "CONFIRM" | "RELEASE";
export type ReservationStatus = "held" | "confirmed" | "cancelled" | "expired";

export interface StockLevels {
  readonly onHand: number;
  readonly held: number;
  readonly sold: number;
}

export interface StockView extends StockLevels {
  readonly sku: string;
  readonly available: number;
}

export interface LedgerEntry {
  /** Its position in the SKU's ledger: `entryKey(seq)`, or a ULID for an entry older than the sequence. */
  readonly sk: string;
  /** Its number in the SKU's commit order (1, 2, 3…, no gaps); absent on entries older than the sequence. */
  readonly seq?: number;
  readonly kind: EntryKind;
  readonly quantity: number;
  readonly reservationId?: string;
  readonly at: number;
}

export interface Reservation {
  readonly id: string;
  readonly status: ReservationStatus;
  readonly items: readonly { sku: string; quantity: number }[];
  readonly expiresAt: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly expiryEventId: string;
  /**
   * Set on the item an expiry event left when it found no hold to release (see unwritten-hold.ts):
   * that attempt's write can no longer commit; it holds nothing and reads as no reservation.
   */
  readonly neverHeld?: true;
  /** On a void: every attempt (expiry event id) an expiry voided; it only grows (unwritten-hold.ts). */
  readonly voided?: ReadonlySet<string>;
}

export interface ReconcileReport {
  readonly sku: string;
  readonly counters: StockView;
  readonly ledger: StockView;
  /** Counter minus ledger, per level; all zero when they agree. */
  readonly drift: StockLevels & { available: number };
  readonly ok: boolean;
  /** Entries read after the latest snapshot. */
  readonly entriesRead: number;
  readonly snapshotUpTo: string | undefined;
}

/** What each kind of entry does to the levels. The one place the ledger's arithmetic lives. */
export function apply(levels: StockLevels, kind: EntryKind, quantity: number): StockLevels {
  switch (kind) {
    case "STOCK_IN":
      return { ...levels, onHand: levels.onHand + quantity };
    case "HOLD":
      return { ...levels, held: levels.held + quantity };
    case "CONFIRM":
      return { ...levels, held: levels.held - quantity, sold: levels.sold + quantity };
    case "RELEASE":
      return { ...levels, held: levels.held - quantity };
  }
}

export function view(sku: string, levels: StockLevels): StockView {
  return { sku, ...levels, available: levels.onHand - levels.held - levels.sold };
}
