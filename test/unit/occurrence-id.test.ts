import { describe, expect, it } from "vitest";
import { EVENT_ID } from "../../shared/events/schema.ts";
import {
  newIncarnation,
  OCCURRENCE_ID,
  occurrenceId,
  parseOccurrenceId,
} from "../../shared/model/occurrence-id.ts";

const at = Date.parse("2026-03-29T01:30:00Z");

describe("occurrence ids", () => {
  it("name the schedule, the instant, the revision and the incarnation, and parse back", () => {
    const id = occurrenceId({ id: "nightly", revision: 1, incarnation: "5f0c9a3e71b2" }, at);
    expect(id).toBe("nightly@2026-03-29T01:30:00Z~1.5f0c9a3e71b2");
    expect(parseOccurrenceId(id)).toEqual({ scheduleId: "nightly", occurrenceAt: at });
  });

  it("differ between two incarnations of one schedule id at the same revision and instant", () => {
    const a = occurrenceId({ id: "nightly", revision: 1, incarnation: newIncarnation() }, at);
    const b = occurrenceId({ id: "nightly", revision: 1, incarnation: newIncarnation() }, at);
    expect(a).not.toBe(b);
    for (const id of [a, b]) expect(id).toMatch(OCCURRENCE_ID);
  });

  it("keep the format of schedules from before incarnations, so their events stay addressable", () => {
    expect(occurrenceId({ id: "nightly", revision: 1 }, at)).toBe("nightly@2026-03-29T01:30:00Z");
    expect(occurrenceId({ id: "nightly", revision: 3 }, at)).toBe("nightly@2026-03-29T01:30:00Z~3");
    for (const id of ["nightly@2026-03-29T01:30:00Z", "nightly@2026-03-29T01:30:00Z~3"]) {
      expect(parseOccurrenceId(id)).toEqual({ scheduleId: "nightly", occurrenceAt: at });
    }
  });

  it("stay within an event id's 128 characters and never look like a client's event id", () => {
    const id = occurrenceId({ id: "s".repeat(80), revision: 999_999_999, incarnation: newIncarnation() }, at);
    expect(id).toMatch(OCCURRENCE_ID);
    expect(id.length).toBeLessThanOrEqual(128);
    expect(EVENT_ID.test(id)).toBe(false);
    expect(parseOccurrenceId("nightly@2026-03-29T01:30:00Z~1.5F0C9A3E71B2")).toBeUndefined();
  });
});
