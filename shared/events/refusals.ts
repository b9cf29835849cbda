import { JournalConditionError } from "../journal/errors.ts";
import type { JournalItem } from "../journal/item.ts";
import { EventNotFoundError, EventStateConflictError } from "./errors.ts";

/** What an operation on an existing event makes of a journal item that refused its write. */
export interface Refusal {
  readonly id: string;
  readonly operation: "cancel" | "reschedule" | "replay";
  /**
   * Whether the item as found lets the operation answer anyway: the same write was made before
   * (a second cancel), or a concurrent one got there first. Otherwise the answer is a conflict.
   */
  readonly accepts: (existing: JournalItem) => boolean;
  /** Runs before the not-found answer, to undo what the operation did in the index first. */
  readonly onMissing?: () => Promise<unknown>;
}

/**
 * Runs a conditional journal write and reads a refusal as the API's answer, the one place that
 * does: no item is `EventNotFoundError`, an item in a state the operation does not accept is
 * `EventStateConflictError`, and one it accepts is returned with `written: false` so the operation
 * finishes from it. Any other error passes through.
 */
export async function journalWrite(
  write: Promise<JournalItem>,
  refusal: Refusal,
): Promise<{ readonly item: JournalItem; readonly written: boolean }> {
  try {
    return { item: await write, written: true };
  } catch (error) {
    if (!(error instanceof JournalConditionError)) throw error;
    if (!error.existing) {
      await refusal.onMissing?.();
      throw new EventNotFoundError(refusal.id);
    }
    if (!refusal.accepts(error.existing))
      throw new EventStateConflictError(refusal.id, error.existing.status, refusal.operation);
    return { item: error.existing, written: false };
  }
}
