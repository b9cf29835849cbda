/** An update with nothing to set, add or remove: DynamoDB would refuse it, so it is never sent. */
export class EmptyUpdateError extends Error {
  constructor() {
    super("an update needs at least one attribute to set, add or remove");
    this.name = "EmptyUpdateError";
  }
}

/**
 * A batch read or write still left part of its request unprocessed after every retry (DynamoDB
 * throttled it for several seconds). The caller's request fails; nothing is half-hidden.
 */
export class UnprocessedRequestError extends Error {
  constructor(
    readonly operation: "BatchGetItem" | "BatchWriteItem",
    readonly rounds: number,
  ) {
    super(`${operation} left items unprocessed after ${rounds} rounds`);
    this.name = "UnprocessedRequestError";
  }
}
