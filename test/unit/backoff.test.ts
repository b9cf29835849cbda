import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoffDelay, RETRY_AFTER_CAP_MS, retryDelay } from "../../shared/events/backoff.ts";
import { DependencyUnavailableError, WebhookSlotsBusyError } from "../../shared/handlers/errors.ts";

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

describe("retryDelay", () => {
  const busy = (retryAfterMs: number) =>
    new WebhookSlotsBusyError("https://hooks.example", 64, 0, retryAfterMs);

  it("is the backoff for a failure without a hint, and for a hint of nothing", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (a, r) => {
          const backoff = backoffDelay(a, undefined, defaults, () => r);
          expect(retryDelay(new Error("500"), a, undefined, defaults, () => r)).toBe(backoff);
          expect(retryDelay(busy(0), a, undefined, defaults, () => r)).toBe(backoff);
          expect(
            retryDelay(new DependencyUnavailableError("DynamoDB"), a, undefined, defaults, () => r),
          ).toBe(backoff);
        },
      ),
    );
  });

  it("waits at least a given-back attempt's hint, spread by up to half again, at most 15 minutes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.double({ min: 1, max: 1e8, noNaN: true }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (attempt, hint, r) => {
          const delay = retryDelay(busy(hint), attempt, undefined, defaults, () => r);
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(Math.min(hint, RETRY_AFTER_CAP_MS));
          expect(delay).toBeGreaterThanOrEqual(backoffDelay(attempt, undefined, defaults, () => r));
          expect(delay).toBeLessThanOrEqual(
            Math.max(Math.ceil(Math.min(hint * 1.5, RETRY_AFTER_CAP_MS)), defaults.maxMs),
          );
        },
      ),
    );
    // A hint on a plain error (not a given-back attempt) is not one.
    const other = Object.assign(new Error("x"), { retryAfterMs: 50_000 });
    expect(retryDelay(other, 1, undefined, { baseMs: 10, maxMs: 10 }, () => 0.5)).toBe(5);
    expect(retryDelay(busy(50_000), 1, undefined, { baseMs: 10, maxMs: 10 }, () => 0.5)).toBe(62_500);
  });
});
