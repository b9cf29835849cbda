import { checkQuietLateness } from "./checks/fairness.ts";
import { checkJournal } from "./checks/journal.ts";
import { checkQuietReads } from "./checks/reads.ts";
import { checkSchedules } from "./checks/schedules.ts";
import type { CheckContext } from "./checks/support.ts";
import type { ArrivalRecord, FaultKind, HistoryRecord, MetaRecord, OpRecord } from "./history.ts";

/**
 * Checks a soak's whole history against what PRODUCT.md promises (invariants 1–8). Pure: it reads
 * records and returns violations, each with the story of the thing it concerns (every record
 * about it, in time order), so a failure can be understood from the report alone.
 *
 * The model (docs/reliability.md says the same in prose):
 * - An answer is definite when it is a status below 500. A 5xx, a timeout or a reset connection is
 *   "unknown": the operation may or may not have taken effect. A refused connection never arrived.
 * - An event exists when a create answered 201/200, or it was seen later (a GET, a delivery).
 * - Never early: a delivery must arrive no earlier than the earliest runAt the event could have had
 *   then: the last runAt a definite answer fixed before it, or the runAt of any reschedule (or the
 *   send time of any replay) that was on its way at the time.
 * - Cancel means cancel: no delivery after a cancel answered 200, unless a replay followed it.
 * - Final is final: no delivery after a GET answered succeeded, cancelled or dead, unless a replay
 *   was sent in between. At-least-once allows duplicates before a success is recorded, not after.
 * - At least once: every event that exists ends succeeded, dead, or cancelled (only if a cancel was
 *   sent); succeeded only if the receiver answered 2xx to some delivery.
 * - Idempotent by id: one 201 per id; never two different bodies accepted; the same body never 409.
 * - Leases: no two owners certainly hold one lease at the same moment; tokens never go down.
 * - Stock: at no point in the ledger do held + sold exceed the stock received; the ledger is in
 *   commit order (its numbered entries are 1, 2, 3… with no gap or repeat); the counters agree;
 *   no stock appears that no one sent; an unconfirmed hold is released by expiresAt + grace; a
 *   confirmed hold is never released.
 * - Tenants, schedules and the journal (checks/*.ts): a quiet tenant's lateness beside a noisy one,
 *   its stats and timeline; every occurrence of a live schedule; no event stuck or answered
 *   otherwise than the journal records.
 */

export type { Rule } from "./rules.ts";

import type { Rule } from "./rules.ts";

export interface Violation {
  readonly rule: Rule;
  /** The event id, lease name, SKU or reservation id it concerns. */
  readonly subject: string;
  readonly message: string;
  /** Every record about the subject, formatted, in time order. */
  readonly story: readonly string[];
}

export interface Lateness {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export interface CheckReport {
  readonly violations: readonly Violation[];
  readonly operations: Readonly<Record<string, number>>;
  readonly unknownAnswers: number;
  readonly faults: Readonly<Partial<Record<FaultKind, number>>>;
  readonly events: { readonly accepted: number; readonly delivered: number; readonly deliveries: number };
  /** First delivery of each event minus its runAt (ms), by the receiver's clock. */
  readonly lateness: Lateness;
}

const FINAL = new Set(["succeeded", "cancelled", "dead"]);

type Answer = "ok" | "unknown" | "none";

/** Definite (a status below 500), unknown (lost or 5xx), or none (refused: it never arrived). */
export function answerOf(record: OpRecord): Answer {
  if (record.status === undefined) return record.error === "refused" ? "none" : "unknown";
  return record.status >= 500 ? "unknown" : "ok";
}

const iso = (ms: number) => new Date(ms).toISOString();

function parseTime(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

function field(body: unknown, name: string): unknown {
  return body !== null && typeof body === "object" ? (body as Record<string, unknown>)[name] : undefined;
}

function describe(record: HistoryRecord): string {
  switch (record.kind) {
    case "op": {
      const { op } = record;
      const answer =
        record.status !== undefined
          ? `${record.status}${record.body === undefined ? "" : ` ${JSON.stringify(record.body).slice(0, 240)}`}`
          : `unknown (${record.error ?? "no answer"})`;
      return `${iso(record.sentAt)} → ${iso(record.recvAt)} #${record.seq} ${JSON.stringify(op).slice(0, 240)} ⇒ ${answer}`;
    }
    case "arrival":
      return `${iso(record.at)} delivery of ${record.id} attempt ${record.attempt} (body v${record.version}, signature ${record.signatureOk ? "ok" : "BAD"}) answered ${record.answer || "nothing in time"}`;
    case "fault":
      return `${iso(record.at)} fault ${record.fault}${record.detail ? ` (${record.detail})` : ""} until ${iso(record.endAt)}`;
    case "exit":
      return `${iso(record.at)} ${record.process} exited (${record.code ?? record.signal})${record.expected ? "" : " unexpectedly"}`;
    case "phase":
      return `${iso(record.at)} phase ${record.phase}`;
    case "meta":
      return `${iso(record.startedAt)} soak seed ${record.seed} (${record.profile})`;
    case "journal":
      return `${iso(record.at)} journal read: ${record.items.length} items${record.error ? ` (failed: ${record.error})` : ""}`;
  }
}

function timeOf(record: HistoryRecord): number {
  switch (record.kind) {
    case "op":
      return record.sentAt;
    case "meta":
      return record.startedAt;
    default:
      return record.at;
  }
}

/** Faults overlap every subject's story: they are the likely cause. */
function story(records: readonly HistoryRecord[], faults: readonly HistoryRecord[]): string[] {
  return [...records, ...faults].sort((a, b) => timeOf(a) - timeOf(b)).map((r) => describe(r));
}

interface Create {
  readonly record: OpRecord;
  readonly version: number;
  readonly runAt: number;
  /** The item's own status (a batch item's), or undefined when its answer was lost. */
  readonly status: number | undefined;
}

interface EventHistory {
  readonly id: string;
  readonly creates: Create[];
  readonly ops: OpRecord[];
  readonly arrivals: ArrivalRecord[];
}

export function check(history: readonly HistoryRecord[]): CheckReport {
  const meta = history.find((r): r is MetaRecord => r.kind === "meta");
  const holdGraceMs = meta?.holdGraceMs ?? 30_000;
  const loadEndsAt = meta?.loadEndsAt ?? Number.POSITIVE_INFINITY;
  const finalPhase = history.find((r) => r.kind === "phase" && r.phase === "final");
  const finalAt = finalPhase ? timeOf(finalPhase) : Number.POSITIVE_INFINITY;
  const faults = history.filter((r) => r.kind === "fault" || r.kind === "exit");
  const ops = history.filter((r): r is OpRecord => r.kind === "op");
  const violations: Violation[] = [];

  const events = new Map<string, EventHistory>();
  const eventOf = (id: string) => {
    let e = events.get(id);
    if (!e) {
      e = { id, creates: [], ops: [], arrivals: [] };
      events.set(id, e);
    }
    return e;
  };
  for (const record of ops) {
    const { op } = record;
    if (op.type === "create") {
      eventOf(op.event.id).creates.push({
        record,
        version: op.event.version,
        runAt: op.event.runAt,
        status: answerOf(record) === "ok" ? record.status : undefined,
      });
    } else if (op.type === "batch") {
      const results = field(record.body, "results");
      op.events.forEach((spec, index) => {
        let status: number | undefined;
        if (answerOf(record) === "ok") {
          if (record.status !== 200 || !Array.isArray(results)) status = record.status;
          else {
            const item = results.find((r) => field(r, "index") === index) ?? results[index];
            const s = field(item, "status");
            status = typeof s === "number" && s < 500 ? s : undefined;
          }
        }
        if (answerOf(record) !== "none")
          eventOf(spec.id).creates.push({ record, version: spec.version, runAt: spec.runAt, status });
      });
    } else if (
      op.type === "cancel" ||
      op.type === "reschedule" ||
      op.type === "replay" ||
      op.type === "get"
    ) {
      eventOf(op.id).ops.push(record);
    }
  }
  for (const record of history) {
    // A schedule's occurrence ("<schedule>@<instant>") is judged with its schedule (checks/schedules.ts).
    if (record.kind === "arrival" && !record.id.includes("@")) eventOf(record.id).arrivals.push(record);
  }

  const latenesses: number[] = [];
  let accepted = 0;
  let delivered = 0;
  let deliveries = 0;
  for (const e of events.values()) {
    const own: HistoryRecord[] = [...new Set([...e.creates.map((c) => c.record), ...e.ops]), ...e.arrivals];
    const report = (rule: Rule, message: string) =>
      violations.push({ rule, subject: e.id, message, story: story(own, faults) });
    deliveries += e.arrivals.length;
    if (e.arrivals.length > 0) delivered++;
    checkEvent(e, report, { loadEndsAt, finalAt }, latenesses, () => accepted++);
  }

  checkLeases(ops, faults, violations);
  checkStock(ops, faults, violations, holdGraceMs);
  const ctx: CheckContext = {
    history,
    ops,
    faults,
    meta,
    bounds: meta?.bounds,
    finalAt,
    report: (rule, subject, message, records) =>
      violations.push({ rule, subject, message, story: story(records, faults) }),
  };
  checkQuietLateness(ctx);
  checkQuietReads(ctx);
  checkSchedules(ctx);
  checkJournal(ctx);

  const operations: Record<string, number> = {};
  let unknownAnswers = 0;
  for (const record of ops) {
    const name = record.op.type === "lease" ? `lease.${record.op.action}` : record.op.type;
    operations[name] = (operations[name] ?? 0) + 1;
    if (answerOf(record) === "unknown") unknownAnswers++;
  }
  const faultCounts: Partial<Record<FaultKind, number>> = {};
  for (const record of history) {
    if (record.kind === "fault") faultCounts[record.fault] = (faultCounts[record.fault] ?? 0) + 1;
  }
  return {
    violations,
    operations,
    unknownAnswers,
    faults: faultCounts,
    events: { accepted, delivered, deliveries },
    lateness: summarize(latenesses),
  };
}

function checkEvent(
  e: EventHistory,
  report: (rule: Rule, message: string) => void,
  bounds: { loadEndsAt: number; finalAt: number },
  latenesses: number[],
  countAccepted: () => void,
): void {
  // Idempotency by id.
  const created = e.creates.filter((c) => c.status === 201);
  if (created.length > 1)
    report("duplicate-create", `${created.length} creates of ${e.id} each answered 201 (created)`);
  const acceptedVersions = new Set(
    e.creates.filter((c) => c.status === 201 || c.status === 200).map((c) => c.version),
  );
  if (acceptedVersions.size > 1)
    report("conflicting-body-accepted", `bodies ${[...acceptedVersions].join(" and ")} were both accepted`);
  for (const c of e.creates) {
    if (c.status !== 409) continue;
    const rival = e.creates.some(
      (o) => o.version !== c.version && o.status !== 409 && o.record.sentAt <= c.record.recvAt,
    );
    if (!rival) report("same-body-refused", `a create with the only body ever sent answered 409`);
  }

  const gets = e.ops.filter((r) => r.op.type === "get" && answerOf(r) === "ok");
  const finalGet = [...gets].reverse().find((r) => r.sentAt >= bounds.finalAt);
  const finalStatus = finalGet?.status === 200 ? field(finalGet.body, "status") : undefined;
  const exists = acceptedVersions.size > 0 || e.arrivals.length > 0 || gets.some((g) => g.status === 200);
  if (!exists) return;
  countAccepted();
  const version = [...acceptedVersions][0] ?? e.arrivals[0]?.version;

  // Which runAts the event could have had at each moment.
  const first = e.creates.find((c) => c.status === 201 || c.status === 200) ?? e.creates[0];
  const answeredRunAt = first ? parseTime(field(first.record.body, "runAt")) : undefined;
  const batchRunAt = first ? batchItemRunAt(first) : undefined;
  // A 201 answers with the runAt the create set. A 200 answers with the event as it stands, whose
  // runAt may already be a retry's time; an equal body (a 200, not a 409) means the create asked
  // for the same runAt, so the one sent is the event's own.
  const createdRunAt =
    first?.status === 201
      ? (answeredRunAt ?? batchRunAt ?? first.runAt)
      : (batchRunAt ?? first?.runAt ?? answeredRunAt);
  type Change = { sentAt: number; recvAt: number; runAt: number; definite: boolean; replay: boolean };
  const changes: Change[] = [];
  for (const r of e.ops) {
    const answer = answerOf(r);
    if (answer === "none") continue;
    if (r.op.type === "reschedule" && (answer === "unknown" || r.status === 200)) {
      const runAt = (answer === "ok" ? parseTime(field(r.body, "runAt")) : undefined) ?? r.op.runAt;
      changes.push({ sentAt: r.sentAt, recvAt: r.recvAt, runAt, definite: answer === "ok", replay: false });
    }
    if (r.op.type === "replay" && (answer === "unknown" || r.status === 200)) {
      changes.push({
        sentAt: r.sentAt,
        recvAt: r.recvAt,
        runAt: r.sentAt,
        definite: answer === "ok",
        replay: true,
      });
    }
  }
  const floorAt = (at: number): { floor: number; rescheduled: boolean } => {
    let base = createdRunAt ?? Number.NEGATIVE_INFINITY;
    let baseSent = Number.NEGATIVE_INFINITY;
    let rescheduled = false;
    for (const c of changes) {
      if (c.definite && c.recvAt <= at && c.sentAt >= baseSent) {
        base = c.runAt;
        baseSent = c.sentAt;
        rescheduled = !c.replay;
      }
    }
    let floor = base;
    for (const c of changes) if (c.sentAt > baseSent && c.sentAt < at) floor = Math.min(floor, c.runAt);
    return { floor, rescheduled };
  };
  const replayedBetween = (from: number, to: number) =>
    e.ops.some(
      (r) =>
        r.op.type === "replay" &&
        answerOf(r) !== "none" &&
        (answerOf(r) === "unknown" || r.status === 200) &&
        r.sentAt < to &&
        r.recvAt > from - 1,
    );

  const cancels = e.ops.filter((r) => r.op.type === "cancel" && r.status === 200);
  const finals = gets.filter((g) => g.status === 200 && FINAL.has(String(field(g.body, "status"))));
  let first_: number | undefined;
  for (const a of e.arrivals) {
    if (!a.signatureOk)
      report("bad-signature", `delivery attempt ${a.attempt} failed signature verification`);
    if (version !== undefined && a.version !== version)
      report("wrong-body-ran", `a delivery carried body v${a.version}, but v${version} was the one accepted`);
    const { floor, rescheduled } = floorAt(a.at);
    if (a.at < floor) {
      const by = floor - a.at;
      if (rescheduled || (createdRunAt !== undefined && a.at >= createdRunAt))
        report(
          "older-runat-after-reschedule",
          `attempt ${a.attempt} arrived ${by} ms before the runAt a reschedule set (${iso(floor)})`,
        );
      else report("early", `attempt ${a.attempt} arrived ${by} ms before its runAt (${iso(floor)})`);
    }
    for (const c of cancels) {
      if (a.at > c.recvAt && !replayedBetween(c.recvAt, a.at))
        report(
          "ran-after-cancel",
          `attempt ${a.attempt} arrived after a cancel answered 200 at ${iso(c.recvAt)}`,
        );
    }
    for (const g of finals) {
      if (a.at > g.recvAt && !replayedBetween(g.sentAt, a.at))
        report(
          "ran-after-final",
          `attempt ${a.attempt} arrived after the event was seen ${String(field(g.body, "status"))} at ${iso(g.recvAt)}`,
        );
    }
    if (first_ === undefined) {
      first_ = a.at;
      if (a.at >= floor && Number.isFinite(floor)) latenesses.push(a.at - floor);
    }
  }

  // At least once, judged on the final state once every fault has ended.
  const due = createdRunAt === undefined || createdRunAt <= bounds.loadEndsAt;
  const cancelSent = e.ops.some(
    (r) => r.op.type === "cancel" && (answerOf(r) === "unknown" || r.status === 200),
  );
  if (!Number.isFinite(bounds.finalAt)) return;
  if (!finalGet) {
    report("final-state-unknown", "no GET after the quiet period answered");
    return;
  }
  if (finalGet.status === 404) {
    report("lost", "the event was accepted, but after the quiet period GET answers 404");
    return;
  }
  if (finalStatus === "succeeded" && !e.arrivals.some((a) => a.answer >= 200 && a.answer < 300))
    report("succeeded-without-delivery", "the event is succeeded, but the receiver never answered 2xx to it");
  if (finalStatus === "cancelled" && !cancelSent) {
    // Told apart because it is a known bug (test/chaos/findings.test.ts): a cancel that answered
    // 404 ("no such event") still cancelled the event created after it.
    const notFound = e.ops.some((r) => r.op.type === "cancel" && r.status === 404);
    if (notFound)
      report("cancel-404-took-effect", "the event is cancelled, and the only cancel sent answered 404");
    else report("cancelled-without-cancel", "the event is cancelled, but no cancel was ever sent");
  }
  // The receiver answers 2xx to every attempt of such an event (a hang fails one attempt only),
  // so attempts can run out only if they were spent without reaching it.
  const spec = e.creates.find((c) => c.version === version)?.record.op;
  const specOf =
    spec?.type === "create"
      ? spec.event
      : spec?.type === "batch"
        ? spec.events.find((x) => x.id === e.id && x.version === version)
        : undefined;
  const benign = specOf !== undefined && !specOf.behaviour.gone && specOf.behaviour.fail === undefined;
  if (finalStatus === "dead" && benign)
    report(
      "dead-though-receiver-accepts",
      `the event is dead after ${e.arrivals.length} deliveries, though its receiver accepts every attempt but a hung one`,
    );
  if (due && !FINAL.has(String(finalStatus))) {
    report(
      "never-ran",
      `after the quiet period the event is still ${String(finalStatus)} with ${e.arrivals.length} deliveries`,
    );
  }
}

function batchItemRunAt(c: Create): number | undefined {
  if (c.record.op.type !== "batch") return undefined;
  const results = field(c.record.body, "results");
  if (!Array.isArray(results)) return undefined;
  const index = c.record.op.events.findIndex((s) => s.version === c.version && s.runAt === c.runAt);
  const item = results.find((r) => field(r, "index") === index);
  return parseTime(field(field(item, "event"), "runAt"));
}

function checkLeases(ops: readonly OpRecord[], faults: readonly HistoryRecord[], violations: Violation[]) {
  const byName = new Map<string, OpRecord[]>();
  for (const r of ops) {
    if (r.op.type !== "lease") continue;
    const list = byName.get(r.op.name) ?? [];
    list.push(r);
    byName.set(r.op.name, list);
  }
  for (const [name, records] of byName) {
    const report = (rule: Rule, message: string) =>
      violations.push({ rule, subject: `lease ${name}`, message, story: story(records, faults) });
    // Grants: each answered 200 proves its owner held the token from the answer to expiresAt.
    const held: { owner: string; token: number; from: number; to: number }[] = [];
    const seen: { token: number; owner: string; sentAt: number; recvAt: number; acquire: boolean }[] = [];
    for (const r of records) {
      if (r.op.type !== "lease" || r.status !== 200 || r.op.action === "release") continue;
      const token = field(r.body, "token");
      const expiresAt = parseTime(field(r.body, "expiresAt"));
      if (typeof token !== "number" || expiresAt === undefined) continue;
      // Any release of this token that might have landed ends the certain holding at its sending.
      const released = records
        .filter(
          (o) =>
            o.op.type === "lease" &&
            o.op.action === "release" &&
            o.op.token === token &&
            answerOf(o) !== "none" &&
            (answerOf(o) === "unknown" || o.status === 200),
        )
        .map((o) => o.sentAt);
      const to = Math.min(expiresAt, ...released);
      if (to > r.recvAt) held.push({ owner: r.op.owner, token, from: r.recvAt, to });
      seen.push({
        token,
        owner: r.op.owner,
        sentAt: r.sentAt,
        recvAt: r.recvAt,
        acquire: r.op.action === "acquire",
      });
    }
    for (const a of held) {
      for (const b of held) {
        if (a.owner >= b.owner || a.token === b.token) continue;
        const overlap = Math.min(a.to, b.to) - Math.max(a.from, b.from);
        if (overlap > 0)
          report(
            "lease-two-holders",
            `${a.owner} (token ${a.token}) and ${b.owner} (token ${b.token}) both held it for ${overlap} ms from ${iso(Math.max(a.from, b.from))}`,
          );
      }
    }
    for (const a of seen) {
      for (const b of seen) {
        if (a.recvAt >= b.sentAt) continue;
        if (b.token < a.token)
          report("lease-token-down", `token ${b.token} was handed out after token ${a.token}`);
        else if (b.acquire && b.token === a.token && b.owner !== a.owner)
          report("lease-token-down", `token ${a.token} was handed to ${a.owner} and then to ${b.owner}`);
      }
    }
  }
}

type Entry = { seq?: number; kind: string; quantity: number; reservationId?: string; at?: string };

function checkStock(
  ops: readonly OpRecord[],
  faults: readonly HistoryRecord[],
  violations: Violation[],
  holdGraceMs: number,
) {
  const skus = new Set<string>();
  for (const r of ops) {
    if (r.op.type === "receipt" || r.op.type === "stock" || r.op.type === "ledger") skus.add(r.op.sku);
    if (r.op.type === "hold") for (const item of r.op.items) skus.add(item.sku);
  }
  const holds = new Map<string, { hold: OpRecord[]; ops: OpRecord[] }>();
  for (const r of ops) {
    if (
      r.op.type === "hold" ||
      r.op.type === "confirm" ||
      r.op.type === "unhold" ||
      r.op.type === "reservation"
    ) {
      const h = holds.get(r.op.id) ?? { hold: [], ops: [] };
      (r.op.type === "hold" ? h.hold : h.ops).push(r);
      holds.set(r.op.id, h);
    }
  }
  const entriesOf = new Map<string, { entries: Entry[]; at: number }>();
  for (const sku of skus) {
    const mine = ops.filter(
      (r) =>
        (r.op.type === "receipt" && r.op.sku === sku) ||
        ((r.op.type === "stock" || r.op.type === "ledger") && r.op.sku === sku),
    );
    const report = (rule: Rule, message: string) =>
      violations.push({ rule, subject: `sku ${sku}`, message, story: story(mine, faults) });
    let sure = 0;
    let maybe = 0;
    for (const r of mine) {
      if (r.op.type !== "receipt") continue;
      if (r.status === 201) sure += r.op.quantity;
      else if (answerOf(r) === "unknown") maybe += r.op.quantity;
    }
    const ledger = [...mine].reverse().find((r) => r.op.type === "ledger" && r.status === 200);
    if (ledger) {
      const entries = (field(ledger.body, "entries") ?? []) as Entry[];
      entriesOf.set(sku, { entries, at: ledger.sentAt });
      let onHand = 0;
      let held = 0;
      let sold = 0;
      // Numbered entries (all but those written before the ledger was numbered, which come first)
      // are the SKU's commits in order: 1, 2, 3…
      let seq = 0;
      let ordered = true;
      for (const entry of entries) {
        if (ordered && (entry.seq !== undefined || seq > 0)) {
          if (entry.seq === seq + 1) seq = entry.seq;
          else {
            ordered = false;
            report(
              "ledger-out-of-order",
              `ledger entry ${JSON.stringify(entry)} follows entry number ${seq}, not number ${seq + 1}`,
            );
          }
        }
        if (entry.kind === "STOCK_IN") onHand += entry.quantity;
        if (entry.kind === "HOLD") held += entry.quantity;
        if (entry.kind === "CONFIRM") {
          held -= entry.quantity;
          sold += entry.quantity;
        }
        if (entry.kind === "RELEASE") held -= entry.quantity;
        if (held + sold > onHand) {
          report(
            "oversell",
            `after ledger entry ${JSON.stringify(entry)} held ${held} + sold ${sold} > received ${onHand}`,
          );
          break;
        }
      }
      if (onHand > sure + maybe)
        report(
          "stock-beyond-received",
          `the ledger holds ${onHand} received, but clients sent at most ${sure + maybe}`,
        );
      if (onHand < sure)
        report("stock-receipt-lost", `the ledger holds ${onHand} received, but ${sure} were acknowledged`);
    }
    const stock = [...mine].reverse().find((r) => r.op.type === "stock" && r.status === 200);
    if (stock) {
      const onHand = Number(field(stock.body, "onHand"));
      const held = Number(field(stock.body, "held"));
      const sold = Number(field(stock.body, "sold"));
      if (held + sold > onHand)
        report("oversell", `counters: held ${held} + sold ${sold} > onHand ${onHand}`);
      if (onHand > sure + maybe)
        report(
          "stock-beyond-received",
          `counters say ${onHand} received, but clients sent at most ${sure + maybe}`,
        );
      if (onHand < sure)
        report("stock-receipt-lost", `counters say ${onHand} received, but ${sure} were acknowledged`);
    }
  }

  for (const [id, h] of holds) {
    const granted = h.hold.find((r) => r.status === 201 || r.status === 200);
    if (granted?.op.type !== "hold") continue;
    const expiresAt = parseTime(field(granted.body, "expiresAt"));
    const report = (rule: Rule, message: string) =>
      violations.push({
        rule,
        subject: `reservation ${id}`,
        message,
        story: story([...h.hold, ...h.ops], faults),
      });
    const confirmed = h.ops.some((r) => r.op.type === "confirm" && r.status === 200);
    for (const item of granted.op.items) {
      const ledger = entriesOf.get(item.sku);
      if (!ledger) continue;
      const mine = ledger.entries.filter((entry) => entry.reservationId === id);
      const settled = mine.some((entry) => entry.kind === "CONFIRM" || entry.kind === "RELEASE");
      if (confirmed && mine.some((entry) => entry.kind === "RELEASE"))
        report("confirmed-hold-released", `confirmed, yet the ledger of ${item.sku} releases it`);
      if (!settled && expiresAt !== undefined && expiresAt + holdGraceMs < ledger.at)
        report(
          "hold-never-expired",
          `held ${item.quantity} of ${item.sku} until ${iso(expiresAt)}; ${Math.round((ledger.at - expiresAt) / 1000)} s later the ledger still holds it`,
        );
    }
  }
}

function summarize(values: number[]): Lateness {
  if (values.length === 0) return { count: 0, p50: 0, p99: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: Math.round(sorted[sorted.length - 1]!) };
}
