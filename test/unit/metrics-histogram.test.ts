import { describe, expect, it } from "vitest";
import {
  bucketUpperMs,
  type Histogram,
  latenessBucket,
  quantileMs,
} from "../../shared/metrics-store/histogram.ts";
import { field, parseField } from "../../shared/metrics-store/keys.ts";

describe("lateness histogram", () => {
  it("puts every lateness in a bucket whose upper bound holds it, at most ~19% above it", () => {
    for (const ms of [0, 1, 2, 5, 17, 99, 100, 101, 999, 1_234, 60_000, 3_600_000, 86_400_000]) {
      const upper = bucketUpperMs(latenessBucket(ms));
      expect(upper).toBeGreaterThanOrEqual(ms);
      expect(upper).toBeLessThanOrEqual(Math.ceil((ms + 1) * 1.19));
    }
  });

  it("counts negative lateness (clock skew) as on time", () => {
    expect(latenessBucket(-50)).toBe(latenessBucket(0));
  });

  it("reports p50 and p99 as the upper bound of the bucket holding that rank", () => {
    const histogram: Histogram = new Map();
    for (let i = 0; i < 98; i++)
      histogram.set(latenessBucket(10), (histogram.get(latenessBucket(10)) ?? 0) + 1);
    histogram.set(latenessBucket(5_000), 2);
    expect(quantileMs(histogram, 0.5)).toBe(bucketUpperMs(latenessBucket(10)));
    expect(quantileMs(histogram, 0.99)).toBe(bucketUpperMs(latenessBucket(5_000)));
    expect(quantileMs(new Map(), 0.5)).toBeUndefined();
  });

  it("names fields by minute of the hour, type and series, and reads them back", () => {
    const name = field(Date.UTC(2026, 0, 1, 10, 42, 30), "billing.invoice", "ok");
    expect(name).toBe("42|billing.invoice|ok");
    expect(parseField(name)).toEqual({ minute: 42, type: "billing.invoice", code: "ok" });
    expect(parseField("garbage")).toBeUndefined();
    expect(parseField("61|x|c")).toBeUndefined();
  });
});
