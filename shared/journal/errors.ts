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
