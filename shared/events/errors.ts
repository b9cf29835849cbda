import { type FieldIssue, ValidationError } from "../errors.ts";
import type { EventStatus, EventView } from "./model.ts";

export type { FieldIssue } from "../errors.ts";

/** An event the engine refuses. Nothing was changed. */
export class EventValidationError extends ValidationError {
  constructor(issues: readonly FieldIssue[], kind: "malformed" | "unprocessable" = "unprocessable") {
    super(issues, kind);
    this.name = "EventValidationError";
  }
}

export class EventNotFoundError extends Error {
  constructor(readonly id: string) {
    super(`event ${id} does not exist`);
    this.name = "EventNotFoundError";
  }
}

/** The same id was sent before with different content. */
export class IdempotencyConflictError extends Error {
  constructor(readonly existing: EventView) {
    super(`event ${existing.id} already exists with different content`);
    this.name = "IdempotencyConflictError";
  }
}

/** The operation is not allowed in the event's current state (cancel a finished event, …). */
export class EventStateConflictError extends Error {
  constructor(
    readonly id: string,
    readonly status: EventStatus,
    readonly operation: string,
  ) {
    super(`cannot ${operation} event ${id}: it is ${status}`);
    this.name = "EventStateConflictError";
  }
}

/** Listing, dead letters and replay read the durable journal; the engine-only mode has none. */
export class JournalRequiredError extends Error {
  constructor(readonly operation: string) {
    super(`${operation} needs the DynamoDB journal (HOURGLASS_JOURNAL=true)`);
    this.name = "JournalRequiredError";
  }
}
