import { parseOccurrenceId } from "../model/occurrence-id.ts";
import type { EventStatus } from "../model/status.ts";
import {
  type HeldBy,
  type NotificationDetail,
  STATUS_AFTER,
  TRANSITIONS,
  type Transition,
  type TransitionNotice,
} from "./model.ts";

/**
 * A notification as one entry of its tenant's Redis stream: the fields of the notice, each a
 * field of the entry, times as epoch-ms integers. Redis stores the field names of a stream's
 * entries once per node when they repeat (every `scheduled` notice has the same ones) and small
 * integers in a byte or two, so an entry is about 80 bytes where the JSON of the detail in one field
 * was about 240: the stream is capped per tenant (10,000 entries by default), and that cap is most of
 * a tenant's Redis memory beside the index (docs/notifications.md). The tenant is the stream's own,
 * the status is left out when it is the one the transition gives, and an occurrence's schedule is
 * read back from its id, so none of them is stored.
 *
 * Fields: `t` transition, `i` id, `y` type, `a` attempt, `m` time (ms), then when they apply `s`
 * status, `r` runAt (ms), `e` error, `h` heldBy.
 */
export function encodeStreamEntry(notice: TransitionNotice): string[] {
  const fields: string[] = [];
  appendStreamEntry(fields, notice);
  return fields;
}

/**
 * Appends the entry's fields to `out` (as encodeStreamEntry returns them) and returns how many:
 * the publisher writes a whole batch into one argument list, without an array a notice.
 */
export function appendStreamEntry(out: (string | number)[], notice: TransitionNotice): number {
  const before = out.length;
  out.push("t", notice.transition, "i", notice.id, "y", notice.type ?? "", "a", String(notice.attempt));
  out.push("m", String(notice.time));
  if (notice.status !== STATUS_AFTER[notice.transition]) out.push("s", notice.status);
  if (notice.runAt !== undefined) out.push("r", String(notice.runAt));
  if (notice.error !== undefined) out.push("e", notice.error);
  if (notice.heldBy !== undefined) out.push("h", notice.heldBy);
  return out.length - before;
}

/** The stream entry's one field in the layout before the compact one: the detail as JSON. */
export const LEGACY_FIELD = "n";

const TRANSITION_SET: ReadonlySet<string> = new Set(TRANSITIONS);

/**
 * The detail of one entry of `tenant`'s stream (`fields` as XREAD returns them), in either
 * layout: entries written before the compact one carry the JSON detail in `n`, and a stream keeps
 * them until they are trimmed. Undefined for an entry that is neither.
 */
export function decodeStreamEntry(tenant: string, fields: readonly string[]): NotificationDetail | undefined {
  const value = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) value.set(fields[i]!, fields[i + 1]!);
  const legacy = value.get(LEGACY_FIELD);
  if (legacy !== undefined) return JSON.parse(legacy) as NotificationDetail;
  const transition = value.get("t");
  const id = value.get("i");
  const time = Number(value.get("m"));
  if (
    transition === undefined ||
    !TRANSITION_SET.has(transition) ||
    id === undefined ||
    !Number.isFinite(time)
  ) {
    return undefined;
  }
  const error = value.get("e");
  const runAt = value.get("r");
  const heldBy = value.get("h") as HeldBy | undefined;
  const occurrence = parseOccurrenceId(id);
  return {
    transition: transition as Transition,
    id,
    tenant,
    type: value.get("y") ?? "",
    attempt: Number(value.get("a") ?? 0),
    status: (value.get("s") as EventStatus | undefined) ?? STATUS_AFTER[transition as Transition],
    time: new Date(time).toISOString(),
    ...(error !== undefined && { error }),
    ...(runAt !== undefined && { runAt: new Date(Number(runAt)).toISOString() }),
    ...(heldBy !== undefined && { heldBy }),
    ...(occurrence && { scheduleId: occurrence.scheduleId }),
  };
}
