import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { between, evaluator } from "../../shared/schedules/evaluate.ts";

/**
 * For random five-field expressions in random zones, croner's occurrences over a whole year are
 * compared with an oracle that walks every minute of the year in UTC and reads the zone's wall
 * clock (Intl): no occurrence is missing, none is repeated or invented, and they strictly increase.
 * The oracle applies the documented DST rules: fixed-time expressions run once, at the end of a
 * gap and on the first pass of a repeated time; other expressions follow the clock.
 */
const ZONES = [
  "UTC",
  "Europe/Berlin",
  "America/New_York",
  "Australia/Lord_Howe",
  "America/Sao_Paulo",
  "Pacific/Chatham",
  "Asia/Tehran",
  "Asia/Kolkata",
  "America/St_Johns",
  "Europe/Dublin",
  "Pacific/Apia",
];

interface Field {
  readonly text: string;
  readonly values: ReadonlySet<number>;
  /** Has a wildcard or a step: not a fixed time under the "no-wildcard" rule. */
  readonly wild: boolean;
}

const range = (from: number, to: number, step = 1) => {
  const out: number[] = [];
  for (let v = from; v <= to; v += step) out.push(v);
  return out;
};

function field(max: number, steps: number[], maxList: number): fc.Arbitrary<Field> {
  return fc.oneof(
    fc.constant({ text: "*", values: new Set(range(0, max)), wild: true }),
    fc.constantFrom(...steps).map((k) => ({ text: `*/${k}`, values: new Set(range(0, max, k)), wild: true })),
    fc
      .uniqueArray(fc.integer({ min: 0, max }), { minLength: 1, maxLength: maxList })
      .map((list) => ({ text: list.join(","), values: new Set(list), wild: false })),
    fc.tuple(fc.integer({ min: 0, max }), fc.integer({ min: 0, max: 3 })).map(([a, n]) => ({
      text: `${a}-${Math.min(max, a + n)}`,
      values: new Set(range(a, Math.min(max, a + n))),
      wild: false,
    })),
  );
}

const expression = fc
  .record({
    minute: field(59, [10, 15, 20, 30], 3).filter((f) => f.values.size <= 6),
    hour: field(23, [2, 3, 6], 4),
    dow: fc.oneof(
      fc.constant({ text: "*", values: new Set(range(0, 6)), wild: true }),
      fc
        .uniqueArray(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 3 })
        .map((list) => ({ text: list.join(","), values: new Set(list), wild: false })),
    ),
    zone: fc.constantFrom(...ZONES),
    year: fc.integer({ min: 2020, max: 2027 }),
  })
  // croner takes a fraction of a millisecond per occurrence in a zone: keep a year to a few thousand.
  .filter((e) => (e.minute.values.size * e.hour.values.size * e.dow.values.size * 365) / 7 <= 3_000);

type Expression = typeof expression extends fc.Arbitrary<infer T> ? T : never;

function offsets(zone: string, from: number, to: number): (t: number) => number {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
  });
  const quarter = 900_000;
  const cache = new Map<number, number>();
  // Offsets in these years change on quarter hours of UTC, so one reading per quarter hour is exact.
  for (let q = Math.floor(from / quarter) * quarter; q <= to; q += quarter) {
    const p = Object.fromEntries(format.formatToParts(new Date(q)).map((x) => [x.type, Number(x.value)]));
    cache.set(q, Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!) - q);
  }
  return (t) => cache.get(Math.floor(t / quarter) * quarter)!;
}

function oracle(e: Expression, from: number, to: number): number[] {
  const offsetAt = offsets(e.zone, from - 86_400_000, to + 86_400_000);
  const fixed = !e.minute.wild && !e.hour.wild;
  const matches = (wall: number) => {
    const d = new Date(wall);
    return (
      e.minute.values.has(d.getUTCMinutes()) &&
      e.hour.values.has(d.getUTCHours()) &&
      e.dow.values.has(d.getUTCDay())
    );
  };
  const out: number[] = [];
  const seen = new Set<number>();
  for (let t = from; t <= to; t += 60_000) {
    const offset = offsetAt(t);
    const wall = t + offset;
    const jump = offset - offsetAt(t - 60_000);
    let gapMatch = false;
    if (fixed && jump > 0) {
      for (let w = wall - jump; w < wall; w += 60_000) if (matches(w)) gapMatch = true;
    }
    const match = matches(wall) && !(fixed && seen.has(wall));
    if (match || gapMatch) out.push(t);
    seen.add(wall);
  }
  return out;
}

describe("occurrences over a year (property)", () => {
  it("match the wall-clock oracle: none missing, repeated or invented, strictly increasing", () => {
    fc.assert(
      fc.property(expression, (e) => {
        const cron = `${e.minute.text} ${e.hour.text} * * ${e.dow.text}`;
        const from = Date.UTC(e.year, 0, 1);
        const to = Date.UTC(e.year + 1, 0, 1) - 60_000;
        const actual = between(evaluator({ cron, timezone: e.zone }), from, to, 200_000);
        for (let i = 1; i < actual.length; i++) expect(actual[i]!).toBeGreaterThan(actual[i - 1]!);
        const expected = oracle(e, from, to);
        const got = new Set(actual);
        const want = new Set(expected);
        const missing = expected.filter((t) => !got.has(t)).slice(0, 3);
        const extra = actual.filter((t) => !want.has(t)).slice(0, 3);
        expect({
          cron,
          zone: e.zone,
          missing: missing.map((t) => new Date(t).toISOString()),
          extra: extra.map((t) => new Date(t).toISOString()),
        }).toEqual({ cron, zone: e.zone, missing: [], extra: [] });
      }),
      { numRuns: Number(process.env.SCHEDULE_FC_RUNS ?? 8) },
    );
  }, 300_000);
});
