import { type FieldIssue, ValidationError } from "../errors.ts";
import type { EventView } from "../model/event.ts";
import type { DispatchMessage } from "../model/message.ts";
import type { EventStatus } from "../model/status.ts";

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

/** The index holds an event whose journal item is gone: an infrastructure fault, retried by the queue. */
export class JournalItemMissingError extends Error {
  constructor(
    readonly tenant: string,
    readonly id: string,
  ) {
    super(`the journal has no item for ${tenant}/${id}`);
    this.name = "JournalItemMissingError";
  }
}

/** Still not due when the Lambda must stop: the queue redelivers the message (never dropped). */
export class NotDueBeforeDeadlineError extends Error {
  constructor(readonly dispatch: DispatchMessage) {
    super(`${dispatch.member} is not due before this invocation's deadline`);
    this.name = "NotDueBeforeDeadlineError";
  }
}

/** The handler ran past its timeout; the attempt counts as failed and is retried. */
export class HandlerTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`handler did not finish within ${timeoutMs} ms`);
    this.name = "HandlerTimeoutError";
  }
}
