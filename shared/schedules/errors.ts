import { type FieldIssue, ValidationError } from "../errors.ts";
import type { ScheduleView } from "./model.ts";

/** A schedule the service refuses (bad expression, never fires, too frequent, over a limit). Nothing changed. */
export class ScheduleValidationError extends ValidationError {
  constructor(issues: readonly FieldIssue[]) {
    super(issues, "unprocessable");
    this.name = "ScheduleValidationError";
  }
}

export class ScheduleNotFoundError extends Error {
  constructor(readonly id: string) {
    super(`schedule ${id} does not exist`);
    this.name = "ScheduleNotFoundError";
  }
}

/** The same schedule id was sent before with a different body. */
export class ScheduleConflictError extends Error {
  constructor(readonly existing: ScheduleView) {
    super(`schedule ${existing.id} already exists with different content`);
    this.name = "ScheduleConflictError";
  }
}

/** Another request changed the schedule between our read and our conditional write. */
export class ScheduleChangedError extends Error {
  constructor(readonly id: string) {
    super(`schedule ${id} was changed by another request; read it again and retry`);
    this.name = "ScheduleChangedError";
  }
}

/**
 * An occurrence's id already names an event with other content, so the occurrence cannot be made:
 * the materializer counts it as missed (loudly) instead of taking that event for its own.
 */
export class OccurrenceTakenError extends Error {
  constructor(
    readonly tenant: string,
    readonly scheduleId: string,
    readonly id: string,
    readonly existingStatus: string,
  ) {
    super(`occurrence ${id} of schedule ${scheduleId} is taken by another ${existingStatus} event`);
    this.name = "OccurrenceTakenError";
  }
}
