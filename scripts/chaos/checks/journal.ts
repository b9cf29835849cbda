import type { HistoryRecord, JournalEntry, JournalRecord } from "../history.ts";
import { TENANTS } from "../tenants.ts";
import { type CheckContext, field } from "./support.ts";

/**
 * No event stuck, judged at the end, after the quiet period, against the journal read straight
 * from DynamoDB after the final reads:
 * - api-journal-disagree: the final GET answered a final status (succeeded, dead, cancelled) and
 *   the journal records another, or the GET answered a live one (scheduled, retrying, dispatched,
 *   running) and the journal a final one. (`dispatched` and `running` live only in the index; the
 *   journal keeps `scheduled` or `retrying` for them.)
 * - stuck: the journal holds an event, any tenant's, a schedule's occurrence included, still
 *   scheduled or retrying though its runAt was more than STUCK_AFTER before the final reads: the
 *   quiet period gave it every chance to run, and nothing moved it.
 */
export const STUCK_AFTER_MS = 30_000;
const FINAL = new Set(["succeeded", "dead", "cancelled"]);
const PENDING = new Set(["scheduled", "retrying"]);

export function checkJournal(ctx: CheckContext): void {
  const snapshot = [...ctx.history]
    .reverse()
    .find((r): r is JournalRecord => r.kind === "journal" && r.error === undefined);
  if (!snapshot || !Number.isFinite(ctx.finalAt)) return;
  const journal = new Map<string, JournalEntry>();
  for (const item of snapshot.items) journal.set(`${item.tenant}#${item.id}`, item);
  const describe = (j: JournalEntry) =>
    `journal: ${j.status}, runAt ${new Date(j.runAt).toISOString()}, updated ${new Date(j.updatedAt).toISOString()}`;

  const lastGet = new Map<string, { status: string; record: HistoryRecord }>();
  const ownRecords = new Map<string, HistoryRecord[]>();
  for (const r of ctx.ops) {
    if (!("id" in r.op) || r.op.type === "schedule-create") continue;
    const key = `${r.tenant ?? TENANTS.main.id}#${r.op.id}`;
    ownRecords.set(key, [...(ownRecords.get(key) ?? []), r]);
    if (r.op.type !== "get" || r.sentAt < ctx.finalAt || r.status !== 200) continue;
    const status = field(r.body, "status");
    if (typeof status === "string") lastGet.set(key, { status, record: r });
  }
  for (const [key, get] of lastGet) {
    const j = journal.get(key);
    if (!j) continue;
    const apiFinal = FINAL.has(get.status);
    const disagree = apiFinal ? j.status !== get.status : FINAL.has(j.status);
    if (disagree)
      ctx.report(
        "api-journal-disagree",
        j.id,
        `after the quiet period the API answers ${get.status}; the ${describe(j)}`,
        ownRecords.get(key) ?? [get.record],
      );
  }
  for (const j of snapshot.items) {
    if (!PENDING.has(j.status) || j.runAt + STUCK_AFTER_MS >= ctx.finalAt) continue;
    ctx.report(
      "stuck",
      j.id,
      `${Math.round((ctx.finalAt - j.runAt) / 1000)} s past its runAt at the final reads, the event (tenant ${j.tenant}) is still pending; ${describe(j)}`,
      ownRecords.get(`${j.tenant}#${j.id}`) ?? [],
    );
  }
}
