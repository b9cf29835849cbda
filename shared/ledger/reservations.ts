import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { transactionRefusals } from "../dynamo/failures.ts";
import { fieldIssues } from "../events/validate.ts";
import type { Logger } from "../logger.ts";
import type { Admission, HoldAdmission } from "./admission.ts";
import type { LedgerWrites } from "./commit.ts";
import {
  InsufficientStockError,
  LedgerValidationError,
  ReservationConflictError,
  ReservationNotFoundError,
  ReservationStateError,
  type Shortage,
} from "./errors.ts";
import { GroupCommit } from "./group-commit.ts";
import { type LedgerItems, mergeItems, readReservation } from "./items.ts";
import { holdInput, MAX_HOLD_ITEMS, type Reservation } from "./model.ts";
import { ReservationTransitions } from "./transitions.ts";
import { voids, voidUnwrittenHold } from "./unwritten-hold.ts";

/** Schedules and cancels the event that releases a hold when it expires (the engine's job). */
export interface ExpiryScheduler {
  schedule(tenant: string, eventId: string, reservationId: string, at: number): Promise<void>;
  cancel(tenant: string, eventId: string): Promise<void>;
}

/**
 * Time-limited holds, all items or none, as DynamoDB transactions whose condition is
 * `available >= quantity` (no oversell), behind an optional Redis admission for hot SKUs.
 */
export class ReservationService {
  /** A DynamoDB transaction carries 100 actions: the counter, then a reservation and an entry per hold. */
  private readonly groups = new GroupCommit(49, (group: { tenant: string; reservation: Reservation }[]) =>
    this.writeHoldGroup(group),
  );
  private readonly transitions: ReservationTransitions;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly items: LedgerItems,
    private readonly writes: LedgerWrites,
    private readonly expiry: ExpiryScheduler,
    private readonly newId: () => string,
    private readonly clock: () => number,
    private readonly admission: HoldAdmission | undefined,
    private readonly logger: Logger,
  ) {
    this.transitions = new ReservationTransitions(table, writes, (t, id) => this.getReservation(t, id));
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
    // A void is an earlier attempt that never held anything: this one may write over it.
    const holdMs = request.holdSeconds * 1000;
    if (existing && !existing.neverHeld)
      return { reservation: this.sameHold(existing, items, holdMs), created: false };

    const now = this.clock();
    const expiresAt = now + holdMs;
    // Its id is new each attempt: an attempt that fails leaves an event that finds no matching
    // hold and does nothing. It also names the attempt's admission.
    const expiryEventId = `hold-expire:${this.newId()}`;
    const admitted = await this.admit(tenant, id, expiryEventId, items);
    try {
      // The expiry is scheduled before the hold is written, so no hold can exist without it.
      await this.expiry.schedule(tenant, expiryEventId, id, expiresAt);
    } catch (error) {
      if (admitted) await this.admission?.settle(tenant, admitted, false);
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
        (error instanceof InsufficientStockError ||
          error instanceof ReservationConflictError ||
          error instanceof ReservationStateError)
      ) {
        await this.admission?.settle(tenant, admitted, false);
        if (error instanceof InsufficientStockError) {
          await Promise.all(error.shortages.map(({ sku }) => this.admission?.rebuild(tenant, sku)));
        }
      }
      throw error;
    }
    if (admitted) {
      const mine = outcome.created && outcome.reservation.expiryEventId === expiryEventId;
      await this.admission?.settle(tenant, admitted, mine);
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
    if (!this.admission) return undefined;
    const result = await this.admission.admit(tenant, id, attempt, items);
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
      // One counter update for the sum; the holds' entries take consecutive numbers.
      await this.writes.commit(
        tenant,
        group.map(({ reservation }) => this.items.reservationPut(tenant, reservation)),
        [
          {
            sku,
            changes: { held: total, available: -total },
            entries: group.map(({ reservation }) => ({
              kind: "HOLD" as const,
              quantity: reservation.items[0]!.quantity,
              reservationId: reservation.id,
            })),
            atLeast: total,
          },
        ],
      );
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
      await this.writes.commit(
        tenant,
        [this.items.reservationPut(tenant, reservation)],
        items.map(({ sku, quantity }) => ({
          sku,
          changes: { held: quantity, available: -quantity },
          entries: [{ kind: "HOLD" as const, quantity, reservationId: id }],
          atLeast: quantity,
        })),
      );
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
    // This attempt's expiry ran before its write could land, and voided it: nothing is held.
    if (voids(current, expiryEventId)) throw new ReservationStateError(id, "expired", "hold");
    if (current?.expiryEventId === expiryEventId && !current.neverHeld)
      return { reservation: current, created: true };
    // No reservation under this id, or another request's: this request's expiry has nothing to release.
    await this.cancelExpiry(tenant, expiryEventId);
    // Another request with the same id won the race: answer as for a repeat.
    if (current && !current.neverHeld)
      return {
        reservation: this.sameHold(current, items, reservation.expiresAt - reservation.createdAt),
        created: false,
      };
    const refusals = transactionRefusals(error);
    if (!refusals) throw error;
    // The transaction is the reservation, then each SKU's counter and its one entry. A counter
    // refused with enough available was refused for its sequence (retries ran out): not a shortage.
    const shortages: Shortage[] = [];
    items.forEach(({ sku, quantity }, i) => {
      const counter = refusals[1 + i * 2];
      const available = Number(counter?.existing?.available ?? 0);
      if (counter && available < quantity) shortages.push({ sku, requested: quantity, available });
    });
    if (shortages.length > 0) throw new InsufficientStockError(shortages);
    throw error;
  }

  /** Sells what is held. Only while the hold is held and has not expired. */
  async confirm(tenant: string, id: string): Promise<Reservation> {
    const reservation = await this.getReservation(tenant, id);
    const now = this.clock();
    await this.transitions.apply(tenant, reservation, {
      to: "confirmed",
      operation: "confirm",
      now,
      requireUnexpired: true,
      perItem: (sku, quantity) => ({
        sku,
        changes: { held: -quantity, sold: quantity },
        entries: [{ kind: "CONFIRM", quantity, reservationId: id }],
      }),
    });
    await this.cancelExpiry(tenant, reservation.expiryEventId);
    return { ...reservation, status: "confirmed", updatedAt: now };
  }

  /** Returns a held hold's stock, once: a cancel racing an expiry releases it only one time. */
  async release(tenant: string, id: string, reason: "cancelled" | "expired"): Promise<Reservation> {
    return this.releaseHeld(tenant, await this.getReservation(tenant, id), reason);
  }

  private async releaseHeld(
    tenant: string,
    reservation: Reservation,
    reason: "cancelled" | "expired",
  ): Promise<Reservation> {
    const { id } = reservation;
    const now = this.clock();
    await this.transitions.apply(tenant, reservation, {
      to: reason,
      operation: reason === "cancelled" ? "cancel" : "expire",
      now,
      requireUnexpired: false,
      perItem: (sku, quantity) => ({
        sku,
        changes: { held: -quantity, available: quantity },
        entries: [{ kind: "RELEASE", quantity, reservationId: id }],
      }),
    });
    const admission = this.admission;
    if (admission) {
      await Promise.all(
        reservation.items.map(({ sku, quantity }) => admission.credit(tenant, sku, quantity)),
      );
    }
    if (reason === "cancelled") await this.cancelExpiry(tenant, reservation.expiryEventId);
    return { ...reservation, status: reason, updatedAt: now };
  }

  /** Called by the `reservation.expire` event: releases the hold it was scheduled for, if still held. */
  async expire(tenant: string, id: string, expiryEventId: string): Promise<"released" | "nothing to do"> {
    let reservation = await this.findReservation(tenant, id);
    if (!reservation || (reservation.neverHeld && !voids(reservation, expiryEventId))) {
      // Its hold may not be written yet (it is scheduled first): void that write, unless it landed.
      if (await voidUnwrittenHold(this.doc, this.table, tenant, id, expiryEventId, this.clock()))
        return "nothing to do";
      reservation = await this.findReservation(tenant, id);
    }
    if (reservation?.status !== "held" || reservation.expiryEventId !== expiryEventId) return "nothing to do";
    try {
      // The reservation just read is the one to release: its write conditions on it still being held.
      await this.releaseHeld(tenant, reservation, "expired");
      return "released";
    } catch (error) {
      if (error instanceof ReservationStateError) return "nothing to do";
      throw error;
    }
  }

  async getReservation(tenant: string, id: string): Promise<Reservation> {
    const reservation = await this.findReservation(tenant, id);
    if (!reservation || reservation.neverHeld) throw new ReservationNotFoundError(id);
    return reservation;
  }

  private findReservation(tenant: string, id: string): Promise<Reservation | undefined> {
    return readReservation(this.doc, this.table, tenant, id);
  }

  /**
   * A repeat is the same items for the same holdSeconds (as for events, where the delay itself is
   * part of the content): a hold's length is its expiry less its creation, exactly as written.
   */
  private sameHold(
    existing: Reservation,
    items: { sku: string; quantity: number }[],
    holdMs: number,
  ): Reservation {
    if (
      JSON.stringify(mergeItems(existing.items)) !== JSON.stringify(items) ||
      existing.expiresAt - existing.createdAt !== holdMs
    )
      throw new ReservationConflictError(existing.id);
    return existing;
  }

  /**
   * Cancels a hold's expiry event once the hold no longer needs it. A failure is not the caller's:
   * the hold is already settled, and an expiry that fires finds it settled and does nothing. It
   * is logged, not thrown (and not silently dropped).
   */
  private async cancelExpiry(tenant: string, expiryEventId: string): Promise<void> {
    try {
      await this.expiry.cancel(tenant, expiryEventId);
    } catch (error) {
      this.logger.warn("hold expiry event not cancelled; it will find the hold settled and do nothing", {
        tenant,
        expiryEventId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
}
