import { describe, expect, it } from "vitest";
import { check, type Rule } from "../../scripts/chaos/checker.ts";
import type {
  ArrivalRecord,
  HistoryRecord,
  JournalEntry,
  Op,
  OpRecord,
} from "../../scripts/chaos/history.ts";
import { TENANTS } from "../../scripts/chaos/tenants.ts";

/**
 * The tenant, schedule and journal rules (scripts/chaos/checks/*.ts) against hand-made histories:
 * each is shown a history that breaks it and a near miss that does not. (The other rules are in
 * checker.test.ts, already over 400 lines.)
 */
const T = Date.UTC(2030, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();
let seq = 0;
const QUIET = TENANTS.quiet.id;

const meta: HistoryRecord = {
  kind: "meta",
  seed: 1,
  profile: "test",
  startedAt: T,
  holdGraceMs: 1_000,
  loadEndsAt: T + 30_000,
  bounds: { noisyFrom: T + 5_000, tickMs: 250, recoveryMs: 2_000, lookAheadMs: 1_000 },
};
const finalAt = T + 90_000;
const final: HistoryRecord = { kind: "phase", phase: "final", at: finalAt };

function op(
  o: Op,
  sentAt: number,
  recvAt: number,
  status?: number,
  body?: unknown,
  tenant?: string,
): OpRecord {
  return { kind: "op", seq: seq++, op: o, sentAt, recvAt, status, body, tenant };
}
const arrival = (id: string, at: number, version = 1): ArrivalRecord => ({
  kind: "arrival",
  id,
  attempt: 1,
  at,
  version,
  signatureOk: true,
  answer: 200,
  answeredAt: at + 1,
});
/** A quiet event created at `at`, due `at + 500`, delivered `late` ms after that, seen succeeded at the end. */
function quietEvent(n: number, at: number, late: number): HistoryRecord[] {
  const id = `q-${n}`;
  const runAt = at + 500;
  return [
    op({ type: "create", event: { id, version: 1, runAt, behaviour: {} } }, at, at + 10, 201, { id }, QUIET),
    arrival(id, runAt + late),
    op({ type: "get", id }, finalAt + 1, finalAt + 5, 200, { id, status: "succeeded" }, QUIET),
  ];
}
const fault = (at: number, endAt: number): HistoryRecord => ({
  kind: "fault",
  fault: "kill-worker",
  at,
  endAt,
});

function rules(...records: HistoryRecord[]): Rule[] {
  return check([meta, ...records, final])
    .violations.map((v) => v.rule)
    .sort();
}

describe("the quiet tenant's lateness beside the noisy one", () => {
  // Baseline: five events due before the noisy tenant, 100 ms late. Bound 100 + 1000 + 250 ms.
  const calm = [0, 1, 2, 3, 4].flatMap((n) => quietEvent(n, T + n * 800, 100));

  it("a quiet event later than the baseline + 1 s + a tick, with no fault near, is a violation", () => {
    expect(rules(...calm, ...quietEvent(9, T + 8_000, 1_400))).toEqual(["quiet-tenant-late"]);
    const report = check([meta, ...calm, ...quietEvent(9, T + 8_000, 1_400), final]);
    expect(report.violations[0]!.message).toContain("bound 1350 ms");
    expect(report.violations[0]!.message).toContain("p99 100 ms of 5 quiet events");
  });

  it("within the bound, before the noisy tenant started, or with a fault near: no violation", () => {
    expect(rules(...calm, ...quietEvent(9, T + 8_000, 1_300))).toEqual([]);
    // Slow but in the baseline window: it raises the baseline instead.
    expect(rules(...calm, ...quietEvent(9, T + 4_200, 1_400))).toEqual([]);
    expect(rules(...calm, ...quietEvent(9, T + 8_000, 5_000), fault(T + 9_000, T + 9_500))).toEqual([]);
  });

  it("with too few calm samples the baseline is 1 s", () => {
    expect(rules(...quietEvent(9, T + 8_000, 2_200))).toEqual([]);
    expect(rules(...quietEvent(9, T + 8_000, 2_300))).toEqual(["quiet-tenant-late"]);
  });
});

describe("the quiet tenant's stats and timeline", () => {
  const created = [0, 1].map((n) =>
    op(
      { type: "create", event: { id: `q-${n}`, version: 1, runAt: T + 60_000, behaviour: {} } },
      T + n,
      T + n + 10,
      201,
      {},
      QUIET,
    ),
  );
  const timeline = (at: number, took: number, body: Record<string, unknown>, status = 200) =>
    op(
      { type: "timeline" },
      at,
      at + took,
      status,
      { types: {}, overdue: {}, truncated: false, ...body },
      QUIET,
    );
  const stats = (at: number, took: number, body: Record<string, unknown>) =>
    op({ type: "stats" }, at, at + took, 200, { byStatus: {}, indexSize: 0, ...body }, QUIET);
  const calm = [0, 1, 2, 3, 4].map((i) => stats(T + 100 + i * 500, 50, { byStatus: { scheduled: 2 } }));
  const seenAtEnd = [0, 1].map((n) =>
    op(
      { type: "get", id: `q-${n}` },
      finalAt + 1,
      finalAt + 5,
      200,
      { id: `q-${n}`, status: "scheduled" },
      QUIET,
    ),
  );
  const creates = [...created, ...seenAtEnd];

  it("truncated for a small tenant, or counting more pending events than it created", () => {
    expect(rules(...creates, timeline(T + 200, 20, { truncated: true }))).toEqual(["tenant-read-truncated"]);
    expect(rules(...creates, stats(T + 200, 20, { farTruncated: true }))).toEqual(["tenant-read-truncated"]);
    expect(
      rules(...creates, timeline(T + 200, 20, { types: { webhook: [1, 2] }, overdue: { webhook: 1 } })),
    ).toEqual(["tenant-read-leak"]);
    expect(rules(...creates, stats(T + 200, 20, { byStatus: { scheduled: 2, running: 1 } }))).toEqual([
      "tenant-read-leak",
    ]);
    // Its own two: fine (succeeded ones are not pending).
    expect(
      rules(...creates, timeline(T + 200, 20, { types: { webhook: [1, 0] }, overdue: { webhook: 1 } })),
    ).toEqual([]);
    expect(rules(...creates, stats(T + 200, 20, { byStatus: { scheduled: 2, succeeded: 40 } }))).toEqual([]);
  });

  it("slower than its own earlier reads + 2 s, or failed, beside the noisy tenant with no fault near", () => {
    expect(rules(...creates, ...calm, stats(T + 8_000, 2_100, {}))).toEqual(["tenant-read-slow"]);
    expect(rules(...creates, ...calm, timeline(T + 8_000, 30, {}, 503))).toEqual(["tenant-read-slow"]);
    expect(rules(...creates, ...calm, stats(T + 8_000, 2_000, {}))).toEqual([]);
    expect(rules(...creates, ...calm, stats(T + 8_000, 4_000, {}), fault(T + 7_000, T + 7_100))).toEqual([]);
  });
});

describe("every occurrence of a live schedule runs", () => {
  // s-0: every 2 s from T+2 s to T+14 s (instants 2, 4, …, 12 s).
  const shape = { id: "s-0", startAt: T + 2_000, endAt: T + 14_000, everySeconds: 2 };
  const create = (at: number, generation: number, status = 201) =>
    op({ type: "schedule-create", generation, ...shape }, at, at + 10, status, { id: "s-0" });
  const occ = (t: number, version = 1, late = 50) =>
    arrival(`s-0@${iso(T + t).slice(0, 19)}Z`, T + t + late, version);
  const all = [2_000, 4_000, 6_000, 8_000, 10_000, 12_000];

  it("an instant of a live schedule without a delivery is missed; with all of them, nothing", () => {
    expect(rules(create(T, 1), ...all.map((t) => occ(t)))).toEqual([]);
    expect(rules(create(T, 1), ...all.filter((t) => t !== 8_000).map((t) => occ(t)))).toEqual([
      "schedule-occurrence-missed",
    ]);
  });

  it("deleted and created again under the same id: the old incarnation's deliveries do not count", () => {
    const del = op({ type: "schedule-delete", id: "s-0" }, T + 3_000, T + 3_010, 200, {});
    const again = create(T + 3_200, 2);
    // The old incarnation is judged up to 3 s before its delete; the new one from 1 s after its create.
    const good = [2_000, 4_000]
      .map((t) => occ(t, 1))
      .concat([6_000, 8_000, 10_000, 12_000].map((t) => occ(t, 2)));
    expect(rules(create(T, 1), del, again, ...good)).toEqual([]);
    // The hole: the new incarnation's occurrences answered as the old, cancelled ones; none ran.
    expect(rules(create(T, 1), del, again, occ(2_000, 1))).toEqual([
      "schedule-occurrence-missed",
      "schedule-occurrence-missed",
      "schedule-occurrence-missed",
      "schedule-occurrence-missed",
    ]);
    // Old-body deliveries at the new incarnation's instants do not count for it.
    const stale = [6_000, 8_000, 10_000, 12_000].map((t) => occ(t, 1));
    expect(rules(create(T, 1), del, again, ...stale)).toHaveLength(4);
  });

  it("a delete still on its way when the id is created again ends only the incarnation its answer names", () => {
    // Soak seed 8 (3 minutes), s-0: the delete took 5.5 s and answered with generation 1's body
    // after the re-create had answered 201; the new incarnation's occurrences never ran.
    const body = (v: number) => ({
      id: "s-0",
      event: { type: "webhook", payload: { body: { k: "s-0", v } } },
    });
    const slowDelete = op({ type: "schedule-delete", id: "s-0" }, T + 3_000, T + 8_500, 200, body(1));
    const again = create(T + 3_200, 2);
    expect(rules(create(T, 1), slowDelete, again, occ(2_000, 1))).toHaveLength(4);
    // Had it answered with generation 2's body, or been lost, the new incarnation may be gone.
    const named2 = op({ type: "schedule-delete", id: "s-0" }, T + 3_000, T + 8_500, 200, body(2));
    expect(rules(create(T, 1), named2, again, occ(2_000, 1))).toEqual([]);
    const lost = op({ type: "schedule-delete", id: "s-0" }, T + 3_000, T + 8_500, undefined, undefined);
    expect(rules(create(T, 1), { ...lost, error: "timeout" }, again, occ(2_000, 1))).toEqual([]);
  });

  it("edited near its end: the instants after the edit still run, with either body", () => {
    const edit = op({ type: "schedule-edit", id: "s-0", generation: 2 }, T + 9_500, T + 9_600, 200, {});
    expect(rules(create(T, 1), edit, ...all.slice(0, 4).map((t) => occ(t)), occ(12_000, 2))).toEqual([]);
    // The final occurrence lost (as when the losing materializer cancels it).
    expect(rules(create(T, 1), edit, ...all.slice(0, 4).map((t) => occ(t)))).toEqual([
      "schedule-occurrence-missed",
    ]);
  });

  it("an occurrence before its instant is early; a fault excuses a missed one, never an early one", () => {
    expect(rules(create(T, 1), ...all.map((t) => occ(t, 1, t === 6_000 ? -200 : 50)))).toEqual([
      "schedule-occurrence-early",
    ]);
    expect(
      rules(create(T, 1), fault(T + 7_000, T + 7_500), ...all.filter((t) => t !== 8_000).map((t) => occ(t))),
    ).toEqual([]);
  });
});

describe("no event stuck, nor answered otherwise than the journal records", () => {
  const journal = (items: JournalEntry[]): HistoryRecord => ({ kind: "journal", at: finalAt + 100, items });
  const entry = (id: string, status: string, runAt: number): JournalEntry => ({
    tenant: TENANTS.main.id,
    id,
    status,
    runAt,
    updatedAt: runAt,
  });
  const created = (id: string) =>
    op(
      { type: "create", event: { id, version: 1, runAt: T + 1_000, behaviour: { gone: true } } },
      T,
      T + 10,
      201,
      {
        id,
        status: "scheduled",
        runAt: iso(T + 1_000),
      },
    );
  const get = (id: string, status: string) =>
    op({ type: "get", id }, finalAt + 1, finalAt + 5, 200, { id, status });

  it("the API answers dead while the journal has it scheduled (a replay that never ran)", () => {
    expect(
      rules(
        created("e-1"),
        arrival("e-1", T + 1_050),
        get("e-1", "dead"),
        journal([entry("e-1", "scheduled", T + 20_000)]),
      ),
    ).toEqual(["api-journal-disagree", "stuck"]);
    expect(
      rules(
        created("e-1"),
        arrival("e-1", T + 1_050),
        get("e-1", "dead"),
        journal([entry("e-1", "dead", T + 1_000)]),
      ),
    ).toEqual([]);
    // Running in the index is scheduled in the journal: they agree (never-ran speaks for it).
    expect(
      rules(created("e-1"), get("e-1", "running"), journal([entry("e-1", "scheduled", T + 1_000)])),
    ).toEqual(["never-ran", "stuck"]);
  });

  it("an event no client named (an occurrence) pending long past its runAt is stuck; a recent one is not", () => {
    expect(rules(journal([entry("s-1@2030-01-01T00:00:10Z", "scheduled", T + 10_000)]))).toEqual(["stuck"]);
    expect(rules(journal([entry("s-1@2030-01-01T00:01:05Z", "scheduled", finalAt - 29_000)]))).toEqual([]);
    expect(rules(journal([entry("s-1@2030-01-01T00:00:10Z", "cancelled", T + 10_000)]))).toEqual([]);
  });
});
