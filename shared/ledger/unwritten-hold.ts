import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { and, type Condition, equals, notEquals, notExists, or } from "../dynamo/conditions.ts";
import { onlyIf } from "../dynamo/expression.ts";
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
 * So an expiry that finds no hold of its own does not just end: it puts a void under the
 * reservation's key, naming its attempt (the expiry event's id), with the same condition as the
 * hold's own put. DynamoDB orders the two writes: either the hold committed first (the void is
 * refused, and the expiry releases the hold), or the void did (the hold's put is refused, and the
 * hold answers that it expired before it could be written). A void names one attempt only: a
 * later request with the same id may write over it, and its own expiry voids it again if needed.
 */

/** The item is a void left by the expiry of another attempt than `expiryEventId`'s. */
export function voidOfAnotherAttempt(expiryEventId: string): Condition {
  return and(equals("neverHeld", true), notEquals("expiryEventId", expiryEventId));
}

/** The condition of a hold's reservation put, and of a void: nothing there but other attempts' voids. */
export function reservationFree(expiryEventId: string): Condition {
  return or(notExists("pk"), voidOfAnotherAttempt(expiryEventId));
}

/** Voids the attempt of `expiryEventId` unless its hold is written. True when voided. */
export async function voidUnwrittenHold(
  doc: DynamoDBDocumentClient,
  table: string,
  tenant: string,
  id: string,
  expiryEventId: string,
  now: number,
): Promise<boolean> {
  const item: Reservation = {
    id,
    status: "expired",
    items: [],
    expiresAt: now,
    createdAt: now,
    updatedAt: now,
    expiryEventId,
    neverHeld: true,
  };
  const put = doc.send(
    new PutCommand({
      TableName: table,
      Item: { pk: reservationKey(tenant, id), sk: "reservation", ...item },
      ...onlyIf(reservationFree(expiryEventId)),
    }),
  );
  return onConditionFailed(
    put.then(() => true),
    () => false,
  );
}
