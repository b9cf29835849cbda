import type { JournalItem } from "./item.ts";

/**
 * A conditional write on the journal was refused. It carries the item as it stood when the
 * condition failed (DynamoDB returns it with ReturnValuesOnConditionCheckFailure), or undefined
 * when there was no item at all. Only `ConditionalCheckFailedException` becomes this error.
 */
export class JournalConditionError extends Error {
  constructor(
    readonly operation: string,
    readonly key: string,
    readonly existing: JournalItem | undefined,
  ) {
    super(`${operation} on ${key}: condition failed (${existing ? `status ${existing.status}` : "no item"})`);
    this.name = "JournalConditionError";
  }
}

/** Listing, dead letters and replay read the durable journal; the engine-only mode has none. */
export class JournalRequiredError extends Error {
  constructor(readonly operation: string) {
    super(`${operation} needs the DynamoDB journal (HOURGLASS_JOURNAL=true)`);
    this.name = "JournalRequiredError";
  }
}

/** A page cursor this API did not hand out: bad input, never passed to DynamoDB. */
export class InvalidCursorError extends Error {
  constructor(readonly cursor: string) {
    super("cursor is not one this API returned");
    this.name = "InvalidCursorError";
  }
}
