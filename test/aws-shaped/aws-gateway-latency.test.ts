import { describe, expect, it } from "vitest";
import {
  AWS_LATENCY,
  awsLatency,
  awsLatencyModel,
  REDIS_LATENCY,
  redisLatency,
} from "../../scripts/aws-shaped/aws-gateway/index.ts";

/** The latency model: seeded (a run can be repeated) and shaped as its note says (median, p99). */
function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
}

describe("awsLatency", () => {
  it("repeats with the same seed and differs with another", () => {
    const draw = (seed: number) => {
      const latency = awsLatency(seed);
      return Array.from({ length: 20 }, (_, i) => latency(i % 2 === 0 ? "dynamodb" : "sqs"));
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });

  it("gives a service the same delays however its calls interleave with other services'", () => {
    const alone = awsLatency(5);
    const mixed = awsLatency(5);
    const dynamoAlone = Array.from({ length: 10 }, () => alone("dynamodb"));
    const dynamoMixed = Array.from({ length: 10 }, () => {
      mixed("sqs");
      mixed("events");
      return mixed("dynamodb");
    });
    expect(dynamoMixed).toEqual(dynamoAlone);
  });

  it.each(Object.entries(AWS_LATENCY))("draws %s with the median and p99 of its note", (service, shape) => {
    const latency = awsLatency(42);
    const samples = Array.from({ length: 40_000 }, () => latency(service));
    expect(Math.min(...samples)).toBeGreaterThan(0);
    expect(Math.abs(percentile(samples, 0.5) / shape.medianMs - 1)).toBeLessThan(0.05);
    expect(Math.abs(percentile(samples, 0.99) / shape.p99Ms - 1)).toBeLessThan(0.1);
  });

  it("adds nothing for a service it has no figure for", () => {
    expect(awsLatency(1)("s3")).toBe(0);
  });
});

describe("Redis latency", () => {
  it("draws sub-millisecond round trips, and the model's one-way delay is half of one", () => {
    const roundTrips = Array.from({ length: 40_000 }, redisLatency(3));
    expect(Math.abs(percentile(roundTrips, 0.5) / REDIS_LATENCY.medianMs - 1)).toBeLessThan(0.05);
    expect(Math.abs(percentile(roundTrips, 0.99) / REDIS_LATENCY.p99Ms - 1)).toBeLessThan(0.1);
    const { redis } = awsLatencyModel(3);
    const oneWay = Array.from({ length: 40_000 }, redis);
    expect(Math.abs(percentile(oneWay, 0.5) / (REDIS_LATENCY.medianMs / 2) - 1)).toBeLessThan(0.05);
  });
});
