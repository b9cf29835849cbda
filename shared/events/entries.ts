import { encodeBody } from "../engine/body.ts";
import { memberOf } from "../engine/keys.ts";
import type { IndexEntry, RestoreEntry } from "../engine/redis-index.ts";
import type { JournalItem } from "../journal/item.ts";
import type { NewEvent } from "../model/event.ts";
import { indexRunAt } from "./run-at.ts";

/** The index entry of a new event. With a journal the body names it, so the payload stays there. */
export function entryOf(event: NewEvent, withJournal: boolean): IndexEntry {
  return {
    member: memberOf(event.tenant, event.id),
    runAt: event.runAt,
    body: encodeBody(event, withJournal ? "journal" : { inline: event.payload }),
  };
}

/** The index entry that re-creates a journal item's pending state. */
export function restoreEntryOf(item: JournalItem): RestoreEntry {
  return {
    member: memberOf(item.tenant, item.id),
    runAt: indexRunAt(item.runAt),
    body: encodeBody(
      { type: item.type, maxAttempts: item.maxAttempts, backoff: item.backoff, callbacks: item.callbacks },
      "journal",
    ),
    attempt: item.attempts,
    status: item.status === "dead" ? "dead" : item.status === "retrying" ? "retrying" : "scheduled",
    version: item.version ?? 0,
  };
}
