import { describe, expect, it } from "vitest";
import { between, evaluator, localIso } from "../../shared/schedules/evaluate.ts";
import type { Recurrence } from "../../shared/schedules/model.ts";

const at = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();

function occurrences(recurrence: Recurrence, from: string, to: string): string[] {
  return between(evaluator(recurrence), at(from), at(to), 10_000).map(iso);
}

describe("DST: Europe/Berlin", () => {
  const daily0230 = { cron: "30 2 * * *", timezone: "Europe/Berlin" };

  it("runs a daily 02:30 once on the spring-forward day, at 03:00 CEST (the end of the gap)", () => {
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    expect(occurrences(daily0230, "2026-03-28T00:00:00Z", "2026-03-30T23:59:59Z")).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // 03:00 CEST, once
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
    ]);
    expect(localIso(at("2026-03-29T01:00:00Z"), "Europe/Berlin")).toBe("2026-03-29T03:00:00+02:00");
  });

  it("runs a daily 02:30 once on the fall-back day, at the first of the two 02:30s (CEST)", () => {
    // 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice.
    expect(occurrences(daily0230, "2026-10-24T00:00:00Z", "2026-10-26T23:59:59Z")).toEqual([
      "2026-10-24T00:30:00.000Z",
      "2026-10-25T00:30:00.000Z", // 02:30 CEST only
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  it("keeps */15 fifteen real minutes apart across both changes", () => {
    const every15 = { cron: "*/15 * * * *", timezone: "Europe/Berlin" };
    for (const [from, to] of [
      ["2026-03-28T23:00:00Z", "2026-03-29T03:00:00Z"],
      ["2026-10-24T22:00:00Z", "2026-10-25T03:00:00Z"],
    ] as const) {
      const runs = occurrences(every15, from, to).map(at);
      expect(runs.length).toBe((at(to) - at(from)) / 900_000 + 1);
      for (let i = 1; i < runs.length; i++) expect(runs[i]! - runs[i - 1]!).toBe(900_000);
    }
    // The repeated hour runs on both passes: 02:15 CEST and 02:15 CET are different instants.
    const fall = occurrences(every15, "2026-10-25T00:00:00Z", "2026-10-25T01:59:00Z");
    expect(fall.map((t) => localIso(at(t), "Europe/Berlin"))).toEqual([
      "2026-10-25T02:00:00+02:00",
      "2026-10-25T02:15:00+02:00",
      "2026-10-25T02:30:00+02:00",
      "2026-10-25T02:45:00+02:00",
      "2026-10-25T02:00:00+01:00",
      "2026-10-25T02:15:00+01:00",
      "2026-10-25T02:30:00+01:00",
      "2026-10-25T02:45:00+01:00",
    ]);
  });
});

describe("DST: Australia/Lord_Howe (a 30-minute shift)", () => {
  it("runs a daily 02:15 once on the spring-forward day, at 02:30 +11:00", () => {
    // 2026-10-04: 02:00 +10:30 jumps to 02:30 +11:00.
    const runs = occurrences(
      { cron: "15 2 * * *", timezone: "Australia/Lord_Howe" },
      "2026-10-02T12:00:00Z",
      "2026-10-05T12:00:00Z",
    );
    expect(runs.map((t) => localIso(at(t), "Australia/Lord_Howe"))).toEqual([
      "2026-10-03T02:15:00+10:30",
      "2026-10-04T02:30:00+11:00",
      "2026-10-05T02:15:00+11:00",
    ]);
  });

  it("runs a daily 01:45 once on the fall-back day", () => {
    // 2026-04-05: 02:00 +11:00 goes back to 01:30 +10:30; 01:45 happens twice.
    const runs = occurrences(
      { cron: "45 1 * * *", timezone: "Australia/Lord_Howe" },
      "2026-04-03T12:00:00Z",
      "2026-04-06T12:00:00Z",
    );
    expect(runs.map((t) => localIso(at(t), "Australia/Lord_Howe"))).toEqual([
      "2026-04-04T01:45:00+11:00",
      "2026-04-05T01:45:00+11:00",
      "2026-04-06T01:45:00+10:30",
    ]);
  });
});

describe("zones whose rules changed", () => {
  it("America/Sao_Paulo: a gap at midnight in 2018, none after DST was abolished in 2019", () => {
    const daily0030 = { cron: "30 0 * * *", timezone: "America/Sao_Paulo" };
    expect(
      occurrences(daily0030, "2018-11-03T12:00:00Z", "2018-11-05T12:00:00Z").map((t) =>
        localIso(at(t), "America/Sao_Paulo"),
      ),
    ).toEqual(["2018-11-04T01:00:00-02:00", "2018-11-05T00:30:00-02:00"]);
    expect(
      occurrences(daily0030, "2019-11-02T12:00:00Z", "2019-11-04T12:00:00Z").map((t) =>
        localIso(at(t), "America/Sao_Paulo"),
      ),
    ).toEqual(["2019-11-03T00:30:00-03:00", "2019-11-04T00:30:00-03:00"]);
  });

  it("Pacific/Apia skipped 2011-12-30 entirely: a daily noon runs on each day that exists", () => {
    const runs = occurrences(
      { cron: "0 12 * * *", timezone: "Pacific/Apia" },
      "2011-12-28T00:00:00Z",
      "2011-12-31T12:00:00Z",
    );
    expect(runs.map((t) => localIso(at(t), "Pacific/Apia"))).toEqual([
      "2011-12-28T12:00:00-10:00",
      "2011-12-29T12:00:00-10:00",
      "2011-12-31T12:00:00+14:00",
    ]);
  });
});

describe("rates", () => {
  it("are fixed intervals in absolute time, whatever the zone's DST does", () => {
    const anchor = at("2026-03-29T00:00:00Z");
    const runs = occurrences(
      { rate: "20 minutes", timezone: "Europe/Berlin", anchor },
      "2026-03-29T00:00:00Z",
      "2026-03-29T03:00:00Z",
    ).map(at);
    expect(runs.length).toBe(10);
    for (let i = 1; i < runs.length; i++) expect(runs[i]! - runs[i - 1]!).toBe(1_200_000);
  });

  it("respect startAt (inclusive) and endAt (exclusive)", () => {
    const rec = {
      rate: "1 hour",
      timezone: "UTC",
      startAt: at("2026-01-01T00:00:00Z"),
      anchor: at("2026-01-01T00:00:00Z"),
      endAt: at("2026-01-01T03:00:00Z"),
    };
    expect(occurrences(rec, "2025-12-31T00:00:00Z", "2026-01-02T00:00:00Z")).toEqual([
      "2026-01-01T00:00:00.000Z",
      "2026-01-01T01:00:00.000Z",
      "2026-01-01T02:00:00.000Z",
    ]);
    expect(evaluator(rec).previous(at("2026-01-02T00:00:00Z"), 2).map(iso)).toEqual([
      "2026-01-01T01:00:00.000Z",
      "2026-01-01T02:00:00.000Z",
    ]);
  });
});

describe("six fields with seconds", () => {
  it("fires on the second", () => {
    expect(
      occurrences(
        { cron: "*/20 * * * * *", timezone: "UTC" },
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:01:00Z",
      ),
    ).toEqual([
      "2026-01-01T00:00:00.000Z",
      "2026-01-01T00:00:20.000Z",
      "2026-01-01T00:00:40.000Z",
      "2026-01-01T00:01:00.000Z",
    ]);
  });
});
