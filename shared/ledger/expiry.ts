import { z } from "zod";
import { EventNotFoundError, EventStateConflictError } from "../events/errors.ts";
import type { EventService } from "../events/service.ts";
import { defineHandler } from "../handlers/registry.ts";
import { GroupCommit } from "./group-commit.ts";
import type { ExpiryScheduler, StockLedger } from "./ledger-service.ts";

export const RESERVATION_EXPIRE = "reservation.expire";

/** Hold expiry through the engine: an internal event at `expiresAt`, cancelled on confirm or cancel. */
export function expiryScheduler(events: EventService): ExpiryScheduler {
  // Holds arriving together (a hot SKU) schedule their expiry events in one batch per tenant.
  const batches = new GroupCommit(100, async (group: { tenant: string; input: object }[]) => {
    const results = await events.scheduleBatch(
      group[0]!.tenant,
      group.map((g) => g.input),
      { internal: true },
    );
    return results.map(
      (result): PromiseSettledResult<void> =>
        result.ok ? { status: "fulfilled", value: undefined } : { status: "rejected", reason: result.error },
    );
  });
  return {
    async schedule(tenant, eventId, reservationId, at) {
      await batches.submit(tenant, {
        tenant,
        input: {
          id: eventId,
          type: RESERVATION_EXPIRE,
          payload: { reservationId },
          runAt: new Date(at).toISOString(),
        },
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
    z.object({ reservationId: z.string() }),
    async (payload, context) => {
      const outcome = await ledger.expire(context.tenant, payload.reservationId, context.id);
      context.logger.info("hold expiry", { reservation: payload.reservationId, outcome });
    },
    { internal: true },
  );
}
