import { z } from "zod";
import { EventNotFoundError, EventStateConflictError } from "../events/errors.ts";
import type { EventService } from "../events/service.ts";
import { defineHandler } from "../handlers/registry.ts";
import type { NewEvent } from "../model/event.ts";
import { GroupCommit } from "./group-commit.ts";
import type { ExpiryScheduler, StockLedger } from "./ledger-service.ts";

export const RESERVATION_EXPIRE = "reservation.expire";

const expiryPayload = z.object({ reservationId: z.string() });
type ExpiryPayload = z.infer<typeof expiryPayload>;

/**
 * Hold expiry through the engine: an internal event at `expiresAt`, cancelled on confirm or cancel.
 *
 * Each hold attempt makes its expiry event's id itself, new every time (the ledger names the
 * attempt by it), so no earlier event can carry that id: the events go to the journal as events
 * whose ids Hourglass generated, written in batches without a per-event existence check, instead of
 * one conditional put each. On a hot SKU that was most of a hold's time (issue 33, finding 8).
 */
export function expiryScheduler(events: EventService, clock: () => number = Date.now): ExpiryScheduler {
  // Holds arriving together (a hot SKU) schedule their expiry events in one batch per tenant.
  const batches = new GroupCommit(100, async (group: NewEvent[]) => {
    const results = await events.storeMany(group);
    return results.map(
      (result): PromiseSettledResult<void> =>
        result.ok ? { status: "fulfilled", value: undefined } : { status: "rejected", reason: result.error },
    );
  });
  return {
    async schedule(tenant, eventId, reservationId, at) {
      await batches.submit(tenant, {
        tenant,
        id: eventId,
        type: RESERVATION_EXPIRE,
        payload: { reservationId } satisfies ExpiryPayload,
        runAt: at,
        fingerprint: "",
        createdAt: clock(),
        generatedId: true,
      });
    },
    async cancel(tenant, eventId) {
      try {
        await events.cancel(tenant, eventId);
      } catch (error) {
        // Already fired or running: it will find the hold confirmed or released and do nothing.
        if (!(error instanceof EventNotFoundError || error instanceof EventStateConflictError)) throw error;
      }
    },
  };
}

/** The internal `reservation.expire` handler: releases the hold it was scheduled for, if still held. */
export function reservationExpiryHandler(ledger: StockLedger) {
  return defineHandler(
    RESERVATION_EXPIRE,
    expiryPayload,
    async (payload, context) => {
      const outcome = await ledger.expire(context.tenant, payload.reservationId, context.id);
      context.logger.info("hold expiry", { reservation: payload.reservationId, outcome });
    },
    { internal: true },
  );
}
