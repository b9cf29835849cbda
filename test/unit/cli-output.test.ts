import { describe, expect, it } from "vitest";
import { eventTable, statsReport, useColor } from "../../shared/cli/output.ts";

describe("CLI tables", () => {
  it("wraps a long last error at word boundaries instead of cutting it mid-word", () => {
    const lastError =
      "webhook answered 503 Service Unavailable from http://127.0.0.1:8080/hook after 10000 ms; retrying";
    const text = eventTable([
      {
        id: "01J0000000000000000000000",
        type: "webhook",
        status: "retrying",
        runAt: "2027-01-01T09:00:00.000Z",
        attempts: 2,
        maxAttempts: 5,
        payload: {},
        lastError,
        createdAt: "2027-01-01T08:00:00.000Z",
        updatedAt: "2027-01-01T09:00:01.000Z",
      },
    ]);
    // Each word of the error is whole on some line of the table.
    for (const word of lastError.split(" ")) expect(text).toContain(word);
    expect(text).not.toContain("…");
  });

  it("says how many events wait beyond the near horizon, and when that count stopped short", () => {
    const stats = {
      byStatus: { scheduled: 3 },
      byType: { "order.expire": { scheduled: 3 } },
      oldestOverdueMs: 0,
      indexSize: 1,
      heldBy: {},
      heldByType: {},
      farPending: 2,
      farTruncated: false,
    };
    expect(statsReport(stats)).toContain("due beyond the near horizon (journal only): 2");
    expect(statsReport({ ...stats, farTruncated: true })).toContain("journal only): 2 or more");
    expect(statsReport({ ...stats, farPending: 0 })).not.toContain("near horizon");
  });

  it("colours only a terminal without NO_COLOR", () => {
    expect(useColor({ isTTY: true }, {})).toBe(true);
    expect(useColor({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(useColor({ isTTY: false }, {})).toBe(false);
    expect(useColor({}, {})).toBe(false);
  });
});
