import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoffDelay } from "../../shared/events/backoff.ts";

const defaults = { baseMs: 1_000, maxMs: 60_000 };

describe("backoffDelay", () => {
  it("draws from [0, min(max, base·2^(attempt-1))) with full jitter", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (attempt, r) => {
          const delay = backoffDelay(attempt, undefined, defaults, () => r);
          const ceiling = Math.min(defaults.maxMs, defaults.baseMs * 2 ** (attempt - 1));
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThan(ceiling);
          expect(delay).toBe(Math.floor(r * ceiling));
        },
      ),
    );
  });

  it("grows with the attempt until the cap", () => {
    const top = (attempt: number) => backoffDelay(attempt, undefined, defaults, () => 0.999999);
    expect(top(1)).toBe(999);
    expect(top(2)).toBe(1_999);
    expect(top(3)).toBe(3_999);
    expect(top(20)).toBe(59_999);
  });

  it("honours an event's own policy, and a fixed policy waits exactly its delay", () => {
    expect(
      backoffDelay(3, { strategy: "exponential", delayMs: 100, maxDelayMs: 250 }, defaults, () => 0.999999),
    ).toBe(249);
    expect(backoffDelay(7, { strategy: "fixed", delayMs: 500 }, defaults, () => 0.1)).toBe(500);
  });
});
