import { describe, expect, it } from "vitest";
import { check, type Rule } from "../../scripts/chaos/checker.ts";
import type { ArrivalRecord, EventSpec, HistoryRecord, Op, OpRecord } from "../../scripts/chaos/history.ts";

/**
 * The checker against hand-made histories: each rule is shown a history that breaks it (and must
 * say so, with the event's story), and a near miss that does not (and must stay quiet).
 */
const T = Date.UTC(2030, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();
let seq = 0;

const meta: HistoryRecord = {
  kind: "meta",
  seed: 1,
  profile: "test",
  startedAt: T,
  holdGraceMs: 1_000,
  loadEndsAt: T + 10_000,
};
const final: HistoryRecord = { kind: "phase", phase: "final", at: T + 20_000 };

function op(
  o: Op,
  sentAt: number,
  recvAt: number,
  status?: number,
  body?: unknown,
  error?: string,
): OpRecord {
  return { kind: "op", seq: seq++, op: o, sentAt, recvAt, status, body, error };
}
const spec = (id: string, runAt: number, version = 1): EventSpec => ({ id, version, runAt, behaviour: {} });
const create = (id: string, runAt: number, at: number, status?: number, version = 1) =>
  op(
    { type: "create", event: spec(id, runAt, version) },
    at,
    at + 10,
    status,
    status && status < 300 ? { id, status: "scheduled", runAt: iso(runAt) } : undefined,
    status ? undefined : "timeout",
  );
const get = (id: string, status: string | 404, at = T + 21_000) =>
  op(
    { type: "get", id },
    at,
    at + 5,
    status === 404 ? 404 : 200,
    status === 404 ? { status: 404 } : { id, status },
  );
const arrival = (id: string, at: number, extra: Partial<ArrivalRecord> = {}): ArrivalRecord => ({
  kind: "arrival",
  id,
  attempt: 1,
  at,
  version: 1,
  signatureOk: true,
  answer: 200,
  answeredAt: at + 1,
  ...extra,
});

function rules(...records: HistoryRecord[]): Rule[] {
  return check([meta, ...records, final])
    .violations.map((v) => v.rule)
    .sort();
}

describe("the history checker", () => {
  it("judges a first attempt by the create's runAt, not by a later repeat's answer showing a retry's time", () => {
    // Seed 11, e-473: the create's answer was lost; attempt 1 failed; a repeat create answered 200
    // with the event as it then stood, runAt = the retry's time, later than attempt 1.
    const repeat = op({ type: "create", event: spec("r", T + 1_000) }, T + 3_000, T + 3_010, 200, {
      id: "r",
      status: "retrying",
      runAt: iso(T + 4_000),
    });
    expect(
      rules(
        create("r", T + 1_000, T),
        arrival("r", T + 2_000, { answer: 503 }),
        repeat,
        arrival("r", T + 4_100, { attempt: 2 }),
        get("r", "succeeded"),
      ),
    ).toEqual([]);
    // The same repeat does not hide a first attempt before the create's own runAt.
    expect(
      rules(
        create("r", T + 1_000, T),
        arrival("r", T + 500, { answer: 503 }),
        repeat,
        arrival("r", T + 4_100, { attempt: 2 }),
        get("r", "succeeded"),
      ),
    ).toEqual(["early"]);
  });

  it("finds nothing wrong in a clean history", () => {
    const report = check([
      meta,
      create("a", T + 1_000, T, 201),
      arrival("a", T + 1_050),
      create("b", T + 5_000, T + 100, 201),
      op({ type: "cancel", id: "b" }, T + 200, T + 210, 200, { id: "b", status: "cancelled" }),
      final,
      get("a", "succeeded"),
      get("b", "cancelled"),
    ]);
    expect(report.violations).toEqual([]);
    expect(report.events).toEqual({ accepted: 2, delivered: 1, deliveries: 1 });
    expect(report.lateness.max).toBe(50);
  });

  it("an accepted event that never ran, and one that vanished", () => {
    expect(rules(create("a", T + 1_000, T, 201), get("a", "scheduled"))).toEqual(["never-ran"]);
    expect(rules(create("a", T + 1_000, T, 201), get("a", 404))).toEqual(["lost"]);
    expect(rules(create("a", T + 1_000, T, 201))).toEqual(["final-state-unknown"]);
  });

  it("a create whose answer was lost counts only if the event turns out to exist", () => {
    expect(rules(create("a", T + 1_000, T), get("a", 404))).toEqual([]);
    expect(rules(create("a", T + 1_000, T), get("a", "scheduled"))).toEqual(["never-ran"]);
    // Refused: it never arrived, and a 404 at the end is right.
    expect(
      rules(
        op({ type: "create", event: spec("a", T) }, T, T + 1, undefined, undefined, "refused"),
        get("a", 404),
      ),
    ).toEqual([]);
  });

  it("a batch item is judged by its own result", () => {
    const batch = op(
      { type: "batch", events: [spec("a", T + 1_000), spec("b", T + 1_000)] },
      T,
      T + 10,
      200,
      {
        results: [
          { index: 0, status: 201, event: { id: "a", runAt: iso(T + 1_000) } },
          { index: 1, status: 422, error: {} },
        ],
      },
    );
    expect(rules(batch, get("a", "scheduled"), get("b", 404))).toEqual(["never-ran"]);
  });

  it("a delivery before runAt", () => {
    const story = check([
      meta,
      create("a", T + 1_000, T, 201),
      arrival("a", T + 900),
      final,
      get("a", "succeeded"),
    ]);
    expect(story.violations.map((v) => v.rule)).toEqual(["early"]);
    expect(story.violations[0]!.story.some((line) => line.includes("delivery of a attempt 1"))).toBe(true);
  });

  it("a delivery at the older time after a reschedule answered 200, but not after one whose answer was lost", () => {
    const moved = (status?: number) =>
      op(
        { type: "reschedule", id: "a", runAt: T + 5_000 },
        T + 400,
        T + 500,
        status,
        status ? { id: "a", runAt: iso(T + 5_000) } : undefined,
        status ? undefined : "timeout",
      );
    expect(
      rules(create("a", T + 1_000, T, 201), moved(200), arrival("a", T + 2_000), get("a", "succeeded")),
    ).toEqual(["older-runat-after-reschedule"]);
    expect(
      rules(create("a", T + 1_000, T, 201), moved(), arrival("a", T + 2_000), get("a", "succeeded")),
    ).toEqual([]);
    // Moved earlier: a delivery at the new, earlier time is right.
    const earlier = op({ type: "reschedule", id: "a", runAt: T + 600 }, T + 400, T + 500, 200, {
      runAt: iso(T + 600),
    });
    expect(
      rules(create("a", T + 9_000, T, 201), earlier, arrival("a", T + 700), get("a", "succeeded")),
    ).toEqual([]);
  });

  it("a delivery after a cancel answered 200; a cancel answered 409 forbids nothing", () => {
    const cancel = (status: number) => op({ type: "cancel", id: "a" }, T + 400, T + 500, status, {});
    expect(
      rules(create("a", T + 1_000, T, 201), cancel(200), arrival("a", T + 1_100), get("a", "cancelled")),
    ).toEqual(["ran-after-cancel"]);
    expect(
      rules(create("a", T + 1_000, T, 201), cancel(409), arrival("a", T + 1_100), get("a", "succeeded")),
    ).toEqual([]);
  });

  it("a delivery after the event was seen succeeded, unless a replay came between", () => {
    const seen = get("a", "succeeded", T + 3_000);
    expect(
      rules(
        create("a", T + 1_000, T, 201),
        arrival("a", T + 1_100),
        seen,
        arrival("a", T + 4_000),
        get("a", "succeeded"),
      ),
    ).toEqual(["ran-after-final"]);
    const dead = get("a", "dead", T + 3_000);
    const replay = op({ type: "replay", id: "a" }, T + 3_500, T + 3_600, 200, {
      id: "a",
      status: "scheduled",
    });
    expect(
      rules(
        create("a", T + 1_000, T, 201),
        arrival("a", T + 1_100, { answer: 410 }),
        dead,
        replay,
        arrival("a", T + 4_000),
        get("a", "succeeded"),
      ),
    ).toEqual([]);
    // Two deliveries before any success was recorded: at least once allows that.
    expect(
      rules(
        create("a", T + 1_000, T, 201),
        arrival("a", T + 1_100),
        arrival("a", T + 1_200),
        get("a", "succeeded"),
      ),
    ).toEqual([]);
  });

  it("succeeded without a 2xx, or cancelled without a cancel", () => {
    expect(
      rules(create("a", T + 1_000, T, 201), arrival("a", T + 1_100, { answer: 503 }), get("a", "succeeded")),
    ).toEqual(["succeeded-without-delivery"]);
    expect(rules(create("a", T + 1_000, T, 201), get("a", "cancelled"))).toEqual([
      "cancelled-without-cancel",
    ]);
    const notFound = op({ type: "cancel", id: "a" }, T, T + 5, 404, {});
    expect(rules(notFound, create("a", T + 1_000, T + 10, 201), get("a", "cancelled"))).toEqual([
      "cancel-404-took-effect",
    ]);
  });

  it("dead, though the receiver accepts every attempt", () => {
    expect(rules(create("a", T + 1_000, T, 201), get("a", "dead"))).toEqual(["dead-though-receiver-accepts"]);
    const failing = op(
      { type: "create", event: { ...spec("a", T + 1_000), behaviour: { fail: 99 } } },
      T,
      T + 10,
      201,
      {
        runAt: iso(T + 1_000),
      },
    );
    expect(rules(failing, arrival("a", T + 1_100, { answer: 503 }), get("a", "dead"))).toEqual([]);
  });

  it("idempotency by id: one 201, one body, the same body never refused", () => {
    expect(
      rules(
        create("a", T + 1_000, T, 201),
        create("a", T + 1_000, T + 50, 201),
        arrival("a", T + 1_100),
        get("a", "succeeded"),
      ),
    ).toEqual(["duplicate-create"]);
    expect(
      rules(
        create("a", T + 1_000, T, 201),
        create("a", T + 1_000, T + 50, 200, 2),
        arrival("a", T + 1_100),
        get("a", "succeeded"),
      ),
    ).toEqual(["conflicting-body-accepted"]);
    expect(
      rules(
        create("a", T + 1_000, T, 201),
        create("a", T + 1_000, T + 50, 409),
        arrival("a", T + 1_100),
        get("a", "succeeded"),
      ),
    ).toEqual(["same-body-refused"]);
    expect(
      rules(
        create("a", T + 1_000, T, 201),
        create("a", T + 1_000, T + 50, 409, 2),
        arrival("a", T + 1_100),
        get("a", "succeeded"),
      ),
    ).toEqual([]);
    expect(
      rules(create("a", T + 1_000, T, 201), arrival("a", T + 1_100, { version: 2 }), get("a", "succeeded")),
    ).toEqual(["wrong-body-ran"]);
    expect(
      rules(
        create("a", T + 1_000, T, 201),
        arrival("a", T + 1_100, { signatureOk: false }),
        get("a", "succeeded"),
      ),
    ).toEqual(["bad-signature"]);
  });

  it("two lease holders at once, and a token that goes down", () => {
    const acquire = (owner: string, token: number, at: number, expiresAt: number) =>
      op({ type: "lease", action: "acquire", name: "l", owner, ttlSeconds: 3 }, at, at + 10, 200, {
        token,
        expiresAt: iso(expiresAt),
      });
    expect(rules(acquire("o1", 1, T, T + 3_000), acquire("o2", 2, T + 1_000, T + 4_000))).toEqual([
      "lease-two-holders",
    ]);
    const release = op(
      { type: "lease", action: "release", name: "l", owner: "o1", token: 1 },
      T + 900,
      T + 950,
      200,
      {},
    );
    expect(rules(acquire("o1", 1, T, T + 3_000), release, acquire("o2", 2, T + 1_000, T + 4_000))).toEqual(
      [],
    );
    expect(rules(acquire("o1", 3, T, T + 500), acquire("o2", 2, T + 1_000, T + 1_500))).toEqual([
      "lease-token-down",
    ]);
  });

  const ledger = (
    sku: string,
    entries: { seq?: number; kind: string; quantity: number; reservationId?: string }[],
    at = T + 21_000,
  ) => op({ type: "ledger", sku }, at, at + 5, 200, { entries });
  const receipt = (quantity: number, status?: number) =>
    op({ type: "receipt", sku: "s", quantity }, T, T + 5, status, undefined, status ? undefined : "timeout");

  it("stock: oversold, received from nowhere, receipts lost", () => {
    const r2 = receipt(2, 201);
    expect(
      rules(
        r2,
        ledger("s", [
          { kind: "STOCK_IN", quantity: 2 },
          { kind: "HOLD", quantity: 3, reservationId: "r" },
        ]),
      ),
    ).toEqual(["oversell"]);
    expect(rules(r2, ledger("s", [{ kind: "STOCK_IN", quantity: 5 }]))).toEqual(["stock-beyond-received"]);
    expect(rules(r2, ledger("s", [{ kind: "STOCK_IN", quantity: 1 }]))).toEqual(["stock-receipt-lost"]);
    const unknown5 = receipt(5);
    expect(rules(r2, unknown5, ledger("s", [{ kind: "STOCK_IN", quantity: 7 }]))).toEqual([]);
  });

  it("stock: a ledger out of commit order (a gap, a repeat, an older entry after numbered ones)", () => {
    const r2 = receipt(2, 201);
    const older = { kind: "STOCK_IN", quantity: 1 };
    const first = { seq: 1, kind: "STOCK_IN", quantity: 1 };
    expect(rules(r2, ledger("s", [older, first]))).toEqual([]);
    expect(rules(r2, ledger("s", [{ ...first, quantity: 2 }]))).toEqual([]);
    expect(rules(r2, ledger("s", [first, { ...first, seq: 3 }]))).toEqual(["ledger-out-of-order"]);
    expect(rules(r2, ledger("s", [first, first]))).toEqual(["ledger-out-of-order"]);
    expect(rules(r2, ledger("s", [first, older]))).toEqual(["ledger-out-of-order"]);
  });

  it("holds: one never released after it expired, one released after it was confirmed", () => {
    const hold = op(
      { type: "hold", id: "r", items: [{ sku: "s", quantity: 1 }], holdSeconds: 1 },
      T,
      T + 5,
      201,
      {
        id: "r",
        status: "held",
        expiresAt: iso(T + 1_000),
      },
    );
    const r = receipt(1, 201);
    const stockIn = { kind: "STOCK_IN", quantity: 1 };
    expect(rules(r, hold, ledger("s", [stockIn, { kind: "HOLD", quantity: 1, reservationId: "r" }]))).toEqual(
      ["hold-never-expired"],
    );
    expect(
      rules(
        r,
        hold,
        ledger("s", [
          stockIn,
          { kind: "HOLD", quantity: 1, reservationId: "r" },
          { kind: "RELEASE", quantity: 1, reservationId: "r" },
        ]),
      ),
    ).toEqual([]);
    const confirm = op({ type: "confirm", id: "r" }, T + 100, T + 110, 200, {});
    expect(
      rules(
        r,
        hold,
        confirm,
        ledger("s", [
          stockIn,
          { kind: "HOLD", quantity: 1, reservationId: "r" },
          { kind: "CONFIRM", quantity: 1, reservationId: "r" },
          { kind: "RELEASE", quantity: 1, reservationId: "r" },
        ]),
      ),
    ).toEqual(["confirmed-hold-released"]);
  });
});
