import { and, atMost, type Condition, equals, lessThan, notExists, oneOf, or } from "../dynamo/conditions.ts";

/** The journal's conditions, by what they mean: each write reads as "if pending, set these, remove those". */

/** The event has not finished: it may still be dispatched, rescheduled or cancelled. */
export const isPending: Condition = oneOf("status", ["scheduled", "retrying"]);

/** The event is pending and its version (absent means 0) is below `version`. */
export function olderThan(version: number): Condition {
  return and(isPending, or(notExists("version"), lessThan("version", version)));
}

/** The event is a dead letter. */
export const isDead: Condition = equals("status", "dead");

/**
 * The item's last stamp is at most `at` (`strict`: before it), so its stamps never go back
 * (see stamps.ts). A death is strict: it must come after every stamp a reader saw before it.
 */
export function stampedFrom(at: number, strict: boolean): Condition {
  return or(notExists("updatedAt"), strict ? lessThan("updatedAt", at) : atMost("updatedAt", at));
}
