import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import {
  and,
  type Condition,
  contains,
  equals,
  not,
  notEquals,
  notExists,
  or,
} from "../dynamo/conditions.ts";
import { update } from "../dynamo/expression.ts";
import { onConditionFailed } from "../dynamo/failures.ts";
import { reservationKey } from "./keys.ts";
import type { Reservation } from "./model.ts";

/**
 * A hold's expiry event is scheduled before the hold is written, so that no hold can exist
 * without one. But the write can land after the event has run: a fault between the two (a failed
 * send to the queue, a Redis pause, a FLUSHALL that hands the event, restored from the journal at
 * its near due time, to the dispatcher while the API is still on its way) lets the event run
 * first, find no reservation, and end; the hold written next was then held for good
 * (docs/reliability.md, finding 8).
 *
 * So an expiry that finds no hold of its own does not just end: it leaves a void under the
 * reservation's key and adds its attempt (the expiry event's id) to the void's `voided` set, with
 * a condition the hold's own put mirrors. DynamoDB orders the two writes: either the hold committed
 * first (the void is refused, and the expiry releases the hold), or the void did (the hold's put
 * is refused, and the hold answers that it expired before it could be written).
 *
 * The set only grows while the item is a void, so every attempt voided stays voided: another
 * attempt's void (a client's retry of the same id whose expiry also ran first, or whose shortage
 * left its expiry uncancelled) adds its own id and cannot re-open the first one's write. A later
 * attempt, never voided, still writes over the void. A set on the item, not an item per attempt:
 * the hold's put checks it in its own condition, at no extra write in its transaction.
 */

/**
 * The item is a void, and `expiryEventId`'s attempt is not among those it voided. (A void written
 * before `voided` existed names its one attempt in `expiryEventId`; a void now names its last.)
 */
function voidOfOtherAttempts(expiryEventId: string): Condition {
  return and(
    equals("neverHeld", true),
    not(contains("voided", expiryEventId)),
    notEquals("expiryEventId", expiryEventId),
  );
}

/** The condition of a hold's reservation put: nothing there, or a void of other attempts only. */
export function reservationFree(expiryEventId: string): Condition {
  return or(notExists("pk"), voidOfOtherAttempts(expiryEventId));
}

/** Whether `reservation` is a void that names `expiryEventId`'s attempt. */
export function voids(reservation: Reservation | undefined, expiryEventId: string): boolean {
  if (reservation?.neverHeld !== true) return false;
  return reservation.voided?.has(expiryEventId) === true || reservation.expiryEventId === expiryEventId;
}

/** Voids the attempt of `expiryEventId` unless a hold is written. True when voided (or already). */
export async function voidUnwrittenHold(
  doc: DynamoDBDocumentClient,
  table: string,
  tenant: string,
  id: string,
  expiryEventId: string,
  now: number,
): Promise<boolean> {
  const write = doc.send(
    new UpdateCommand({
      TableName: table,
      Key: { pk: reservationKey(tenant, id), sk: "reservation" },
      ...update({
        set: {
          id,
          status: "expired",
          items: [],
          expiresAt: now,
          createdAt: now,
          updatedAt: now,
          // The last attempt voided; `voided` holds them all.
          expiryEventId,
          neverHeld: true,
        },
        add: { voided: new Set([expiryEventId]) },
        if: or(notExists("pk"), equals("neverHeld", true)),
      }),
    }),
  );
  return onConditionFailed(
    write.then(() => true),
    () => false,
  );
}
