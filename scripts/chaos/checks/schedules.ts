import { parseOccurrenceId } from "../../../shared/model/occurrence-id.ts";
import type { ArrivalRecord, OpRecord } from "../history.ts";
import { type CheckContext, faultNear, field, mayHaveActed } from "./support.ts";

/**
 * Every occurrence of a live schedule runs, once it is due, and never before its instant.
 *
 * An incarnation of a schedule id begins when a create answers 201 and ends when a delete that may
 * have acted on it is sent (a later create of the id is a new incarnation, with its own
 * generations). A delete that answered 200 names what it deleted (its body's generation): it ends
 * that incarnation only. One whose answer was lost may have ended any incarnation live while it was
 * on its way. Its
 * instants are startAt + k × interval before endAt. An instant is judged when it falls at least
 * 1 s after the create's answer, at least SLACK before a delete was sent, before the load
 * ended, no edit was on its way within 1 s of it (the edit replaces the unstarted occurrences:
 * which one runs is the edit's race), and no fault, recovery included, came from a look-ahead plus
 * a recovery before it to SLACK after it (conservative: the soak's schedules have catchUp "all",
 * so a late materializer still runs every passed instant). A judged instant needs a delivery whose occurrence id names
 * the schedule and the instant and whose body is one of the incarnation's generations.
 */
const SLACK_MS = 3_000;
const EDIT_MARGIN_MS = 1_000;

interface Incarnation {
  readonly id: string;
  readonly create: OpRecord & { op: { type: "schedule-create" } };
  readonly generations: Set<number>;
  readonly edits: OpRecord[];
  /** When a delete (or a create over it) that may have acted was sent; +∞ while none was. */
  deletedAt: number;
}

export function checkSchedules(ctx: CheckContext): void {
  const loadEndsAt = ctx.meta?.loadEndsAt ?? Number.POSITIVE_INFINITY;
  if (!Number.isFinite(ctx.finalAt)) return;
  const lookAhead = ctx.bounds?.lookAheadMs ?? 5_000;
  const recovery = ctx.bounds?.recoveryMs ?? 12_000;
  const arrivals = new Map<string, ArrivalRecord[]>();
  for (const r of ctx.history) {
    if (r.kind !== "arrival") continue;
    const ref = parseOccurrenceId(r.id);
    if (!ref) continue;
    const key = `${ref.scheduleId}@${ref.occurrenceAt}`;
    arrivals.set(key, [...(arrivals.get(key) ?? []), r]);
  }

  const incarnations: Incarnation[] = [];
  const current = new Map<string, Incarnation>();
  const byId = new Map<string, OpRecord[]>();
  const deletes: OpRecord[] = [];
  for (const r of [...ctx.ops].sort((a, b) => a.sentAt - b.sentAt)) {
    const op = r.op;
    if (op.type !== "schedule-create" && op.type !== "schedule-edit" && op.type !== "schedule-delete")
      continue;
    byId.set(op.id, [...(byId.get(op.id) ?? []), r]);
    const live = current.get(op.id);
    if (op.type === "schedule-create" && r.status === 201) {
      if (live) live.deletedAt = Math.min(live.deletedAt, r.sentAt);
      const inc: Incarnation = {
        id: op.id,
        create: r as Incarnation["create"],
        generations: new Set([op.generation]),
        edits: [],
        deletedAt: Number.POSITIVE_INFINITY,
      };
      incarnations.push(inc);
      current.set(op.id, inc);
    } else if (op.type === "schedule-edit" && live && mayHaveActed(r)) {
      live.generations.add(op.generation);
      live.edits.push(r);
    } else if (op.type === "schedule-delete" && mayHaveActed(r)) {
      deletes.push(r);
      if (live && deletedGeneration(r) === undefined) current.delete(op.id);
    }
  }
  for (const d of deletes) {
    if (d.op.type !== "schedule-delete") continue;
    const named = deletedGeneration(d);
    for (const inc of incarnations) {
      if (inc.id !== d.op.id) continue;
      const hit =
        named !== undefined
          ? inc.generations.has(named)
          : inc.create.recvAt <= d.recvAt && inc.deletedAt >= d.sentAt;
      if (hit) inc.deletedAt = Math.min(inc.deletedAt, Math.max(d.sentAt, inc.create.sentAt));
      if (hit && named !== undefined && current.get(inc.id) === inc) current.delete(inc.id);
    }
  }

  for (const inc of incarnations) {
    const { op } = inc.create;
    const records = [...(byId.get(inc.id) ?? [])];
    const interval = op.everySeconds * 1_000;
    for (let t = op.startAt; t < op.endAt; t += interval) {
      const seen = arrivals.get(`${inc.id}@${t}`) ?? [];
      for (const a of seen)
        if (a.at < t && inc.generations.has(a.version))
          ctx.report(
            "schedule-occurrence-early",
            `${inc.id}@${new Date(t).toISOString()}`,
            `delivered ${t - a.at} ms before its instant`,
            [...records, ...seen],
          );
      if (t < inc.create.recvAt + 1_000 || t > inc.deletedAt - SLACK_MS || t > loadEndsAt) continue;
      if (inc.edits.some((e) => t >= e.sentAt - EDIT_MARGIN_MS && t <= e.recvAt + EDIT_MARGIN_MS)) continue;
      if (faultNear(ctx, t - lookAhead - recovery, t + SLACK_MS)) continue;
      if (seen.some((a) => inc.generations.has(a.version))) continue;
      const others =
        seen.length > 0 ? ` (deliveries with bodies v${seen.map((a) => a.version).join(", v")} only)` : "";
      ctx.report(
        "schedule-occurrence-missed",
        `${inc.id}@${new Date(t).toISOString()}`,
        `the schedule (created at ${new Date(inc.create.recvAt).toISOString()}, generations ${[...inc.generations].join(", ")}) was live at this instant, but the occurrence never ran${others}`,
        [...records, ...seen],
      );
    }
  }
}

/** The generation a delete that answered 200 says it deleted (the schedule's event body `v`). */
function deletedGeneration(r: OpRecord): number | undefined {
  if (r.status !== 200) return undefined;
  const v = field(field(field(field(r.body, "event"), "payload"), "body"), "v");
  return typeof v === "number" ? v : undefined;
}
